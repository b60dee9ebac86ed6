import datetime as dt

import pytest
from django.conf import settings as django_settings
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from general.models import LogEntry
from general.services import log_remove_old
from general.tasks import remove_old_logs_task
from tests.general.helpers import make_entry
from tests.startup import assert_start_refused, started

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("quiet_log_table")]


def stored() -> list[str]:
    return sorted(LogEntry.objects.values_list("message", flat=True))


@pytest.fixture
def ages():
    """Entries 20 days, 15 days and a minute, 14 days and 1 second old."""
    now = timezone.now()
    make_entry(message="20 days", when=now - dt.timedelta(days=20))
    make_entry(message="15 days", when=now - dt.timedelta(days=15, minutes=1))
    make_entry(message="1 second", when=now - dt.timedelta(seconds=1))
    make_entry(message="14 days", when=now - dt.timedelta(days=14))


class LogRetentionTests:
    def test_it_removes_entries_older_than_the_maximum_age(self, ages):
        assert log_remove_old() == 2
        assert stored() == ["1 second", "14 days"]

    def test_it_follows_the_setting(self, ages, settings):
        settings.LOG_DB_MAX_AGE_DAYS = 1
        assert log_remove_old() == 3
        assert stored() == ["1 second"]

    def test_it_keeps_everything_for_zero_days(self, ages, settings):
        settings.LOG_DB_MAX_AGE_DAYS = 0
        assert log_remove_old() == 0
        assert len(stored()) == 4

    def test_it_deletes_in_batches_of_short_statements(self, settings):
        old = timezone.now() - dt.timedelta(days=30)
        for n in range(5):
            make_entry(message=f"old {n}", when=old)
        make_entry(message="new", when=timezone.now())
        with CaptureQueriesContext(connection) as queries:
            assert log_remove_old(batch_size=2) == 5
        deletes = [query["sql"] for query in queries.captured_queries
                   if query["sql"].startswith("DELETE")]
        assert len(deletes) == 3
        assert all("LIMIT 2" in sql for sql in deletes)
        assert stored() == ["new"]

    def test_it_runs_as_a_periodic_task(self, ages):
        schedule = django_settings.CELERY_BEAT_SCHEDULE["remove-old-logs"]
        assert schedule["task"] == remove_old_logs_task.name == "general.remove_old_logs"
        assert remove_old_logs_task.delay().get() == 2
        assert stored() == ["1 second", "14 days"]


# A negative LOG_DB_MAX_AGE_DAYS is refused here, at start-up, before any retention runs.
@pytest.mark.parametrize("name, value", [("LOG_DB_MAX_AGE_DAYS", "-1"),
                                         ("LOG_DB_LEVEL", "LOUD")])
def test_an_invalid_log_setting_stops_the_start(name, value):
    assert_start_refused(name, **{name: value})


def test_log_db_level_off_stores_nothing():
    # prints the levels of the root logger's database handlers
    result = started("import django, logging; django.setup(); from general.log_handler "
                     "import DatabaseLogHandler; print([h.level for h in logging.getLogger()"
                     ".handlers if isinstance(h, DatabaseLogHandler)])", LOG_DB_LEVEL="off")
    assert result.stdout.strip() == "[]", result.stderr
