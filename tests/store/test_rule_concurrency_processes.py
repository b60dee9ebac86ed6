"""Concurrent rule writers in MANY PROCESSES: the real gunicorn with several workers against
the test PostgreSQL, hammered over HTTP with overlapping creates (the same keys in opposite
orders) and modify-priorities (swaps across two rule sets in opposite orders). No request may
end in a 5xx (a deadlock used to be a 500 "deadlock detected"), and the data must stay
consistent."""
import json
import random
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from store.models import Rule
from tests.factories import make_rules
from tests.store.helpers import BASE
from tests.web_server import gunicorn

pytestmark = pytest.mark.django_db(transaction=True)

WORKERS = 8           # gunicorn worker processes
CLIENTS = 16          # concurrent HTTP clients
REQUESTS = 96         # in all, bounded
RULE_SETS = ("ConsumerA", "ConsumerB", "ConsumerC")
BASE_PRIORITIES = (1, 2, 3, 4)


def _call(port: int, method: str, path: str, body) -> tuple[int, str]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{BASE}/{path}", data=json.dumps(body).encode(), method=method,
        headers={"Content-Type": "application/json", "Authorization": "Bearer SYSTEM//Sysop"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


# Rules per rule set in one create: big enough that two creates' INSERTs overlap in time
# (the old code then deadlocked in about half the runs of this size on a 2-core machine).
PER_SET = 300


def _pair_priorities(number: int) -> list[int]:
    return [100 + PER_SET * number + k for k in range(PER_SET)]


def _create_pair(number: int) -> list[tuple[str, str, dict]]:
    """Two creates of the same keys (rules in two rule sets) in opposite orders: exactly one
    of them may win."""
    entries = [{"consumer": consumer, "serviceInstanceId": f"P{number}x{priority}|svc|1.0.0",
                "priority": priority}
               for consumer in (RULE_SETS[number % 2], RULE_SETS[2])
               for priority in _pair_priorities(number)]
    return [("POST", "create", {"entries": entries}),
            ("POST", "create", {"entries": entries[::-1]})]


def _modify(rules: dict[str, list[Rule]], rng: random.Random, number: int | None):
    """New priorities for every base rule of two rule sets, listed in a random order; with
    `number`, one rule of each set moves to a key that pair `number` is creating (so the
    modification and the creates race for the same index entries)."""
    body = {}
    for consumer in rng.sample(RULE_SETS, 2):
        targets = list(BASE_PRIORITIES)
        if number is not None:
            targets[0] = rng.choice(_pair_priorities(number))
        rng.shuffle(targets)
        body.update({str(rule.id): priority for rule, priority in zip(rules[consumer], targets)})
    items = list(body.items())
    rng.shuffle(items)
    return "PUT", "modify-priorities", dict(items)


def test_concurrent_creates_and_priority_swaps_in_many_processes_never_get_a_5xx(tmp_path):
    rules = {consumer: make_rules(*((consumer, f"Base{p}|svc|1.0.0", p) for p in BASE_PRIORITIES))
             for consumer in RULE_SETS}
    rng = random.Random(10)
    # Each unit's requests side by side in the list, so that they really race.
    units = []
    for number in range(REQUESTS // 4):
        first, second = _create_pair(number)
        units.append([first, _modify(rules, rng, number), second, _modify(rules, rng, None)])
    rng.shuffle(units)
    calls = [call for unit in units for call in unit]

    env = {"WEB_CONCURRENCY": str(WORKERS), "CELERY_BROKER_URL": "", "CONN_MAX_AGE": "0"}
    with gunicorn(env, tmp_path / "gunicorn.log") as port:
        with ThreadPoolExecutor(CLIENTS) as pool:
            results = list(pool.map(lambda call: (call, _call(port, *call)), calls))

    failures = [(call[:2], status, body[:300]) for call, (status, body) in results
                if status >= 500]
    assert not failures, f"{len(failures)} of {len(results)} requests got a 5xx: {failures[:5]}"
    log = (tmp_path / "gunicorn.log").read_text()
    assert "deadlock detected" not in log

    created: dict[str, list[int]] = {}
    for (_, path, body), (status, _) in results:
        if path == "create":
            created.setdefault(body["entries"][0]["serviceInstanceId"].split("x")[0], []).append(status)
    # Each pair: at most one winner; the loser, or both when a modification took one of their
    # keys first, get a 400 (a 423 only if a conflict outlived the retries).
    for statuses in created.values():
        assert statuses.count(201) <= 1 and set(statuses) <= {201, 400, 423}, created
    winners = sum(statuses.count(201) for statuses in created.values())
    base_rules = len(RULE_SETS) * len(BASE_PRIORITIES)
    assert Rule.objects.count() == base_rules + 2 * PER_SET * winners
    for consumer in RULE_SETS:
        priorities = list(Rule.objects.filter(consumer=consumer).values_list("priority",
                                                                            flat=True))
        assert len(priorities) == len(set(priorities)), consumer
