"""Pull on both sources (issue 31, item 2; docs/testing.md "Pull on both sources").

Pull reads its rules, instances and reservations from the source
`orchestration.pull.selectors.pull_source` chooses: the database inside a transaction, the
process's snapshot otherwise (production). A test module puts every test on both with
`pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("pull_source")]`: the fixture
`pull_source` runs each test twice, with the ids

- `database`: in the test's transaction, as these tests always ran (or committing, for a
  test marked so, with PULL_SNAPSHOT off); pull reads the tables;
- `snapshot`: committing (`django_db(transaction=True)`), the process's snapshot loaded at
  the start and then brought up to date by each pull from the change feed, exactly as in a
  web worker; pull reads memory.

Nothing is faked: the fixture only watches `pull_source` and fails the test when a pull read
a source its variant does not allow, or when no pull read the variant's source (it would test
nothing). In the snapshot variant, a pull inside a transaction reads the database, as in
production (a subscription's committed run); every pull outside one must read the snapshot:
one that fell back to the database (the snapshot lagging, dropped) fails the test.

`TEST_PULL_SOURCES` (`database`, `snapshot`; default both, comma-separated) runs only those
variants: the mutation check uses it to test mutants on the snapshot path alone
(bench/mutation_check.py `--pull-sources`).

Two marks keep a test on one source, each with the reason where it is used:
- `reads_no_source`: the request is refused before pull reads anything (its body, its flags,
  its QoS), or the test does not pull at all: the source cannot matter, so it runs once, in
  the test's transaction, and the fixture checks that no source was read;
- `database_only`: the test asserts something of the database source itself (its queries),
  or every pull it makes runs inside a transaction of the code (a subscription's evaluation,
  a push job), where pull reads the database whatever the variant.
"""
import os
from collections.abc import Iterator

import pytest
from django.db import connection

from orchestration.pull import selectors
from orchestration.snapshot.state import SnapshotView, pull_snapshot

DATABASE, SNAPSHOT, UNREAD = "database", "snapshot", "unread"
_VARIANTS = {
    DATABASE: pytest.param(DATABASE, id=DATABASE),
    SNAPSHOT: pytest.param(SNAPSHOT, id=SNAPSHOT, marks=pytest.mark.django_db(transaction=True)),
}
SOURCES = os.environ.get("TEST_PULL_SOURCES", f"{DATABASE},{SNAPSHOT}").split(",")
if not SOURCES or set(SOURCES) - set(_VARIANTS):
    raise ValueError(f"TEST_PULL_SOURCES: {SOURCES}; expected some of {sorted(_VARIANTS)}")

reads_no_source = pytest.mark.parametrize("pull_source", [UNREAD], indirect=True)
database_only = pytest.mark.parametrize("pull_source", [DATABASE], indirect=True)


def _source_name(source: object) -> str:
    return SNAPSHOT if isinstance(source, SnapshotView) else DATABASE


@pytest.fixture(params=[_VARIANTS[source] for source in SOURCES])
def pull_source(request: pytest.FixtureRequest, settings,
                monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The source this run of the test reads (`database`, `snapshot`, or `unread`)."""
    expected = request.param
    read: list[tuple[str, bool]] = []  # (source, in a transaction), by the test's threads too
    choose = selectors.pull_source

    def watched():
        source = choose()
        read.append((_source_name(source), connection.in_atomic_block))
        return source

    monkeypatch.setattr(selectors, "pull_source", watched)
    settings.PULL_SNAPSHOT = expected == SNAPSHOT
    if expected == SNAPSHOT:
        assert pull_snapshot.load(), "the pull snapshot did not load"
    yield expected
    sources = [source for source, _ in read]
    if expected == UNREAD:
        assert read == [], f"a test marked reads_no_source read {sources}"
        return
    assert expected in sources, f"no pull read the {expected}: this variant tested nothing"
    # In the snapshot variant a pull inside a transaction of the code reads the database, as
    # in production; outside one it must read the snapshot.
    checked = sources if expected == DATABASE else [
        source for source, in_transaction in read if not in_transaction]
    assert set(checked) <= {expected}, (
        f"pulls read {sources} (checked: {checked}), all should read the {expected}")
