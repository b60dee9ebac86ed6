from collections.abc import Iterator

import pytest

from tests.general.helpers import configured_handlers_detached


@pytest.fixture
def quiet_log_table() -> Iterator[None]:
    """The log table as the test writes it: entries committed earlier by the log handler (of
    other tests) are deleted in the test's transaction, and none are added meanwhile."""
    from general.models import LogEntry

    with configured_handlers_detached():
        LogEntry.objects.all().delete()
        yield
