import datetime as dt

import pytest
from django.utils import timezone

from config.settings import CELERY_BEAT_SCHEDULE
from orchestration.history.retention import jobs_remove_old
from orchestration.models import OrchestrationJob
from orchestration.tasks import remove_old_jobs_task
from tests.orchestration.history_helpers import EPOCH, make_job, make_push_job
from tests.startup import assert_start_refused

pytestmark = pytest.mark.django_db

Status = OrchestrationJob.Status
NOW = EPOCH + dt.timedelta(days=30)


def finished(days_ago: float, **fields) -> OrchestrationJob:
    """A job finished `days_ago` days before NOW."""
    end = NOW - dt.timedelta(days=days_ago)
    return make_job(**{"created_at": end - dt.timedelta(seconds=2),
                       "started_at": end - dt.timedelta(seconds=1), "finished_at": end,
                       **fields})


def remaining() -> set:
    return set(OrchestrationJob.objects.values_list("id", flat=True))


class JobRetentionTests:
    def test_it_removes_old_done_and_error_jobs_and_keeps_recent_ones(self, settings):
        settings.HISTORY_MAX_AGE_DAYS = 15
        old = [finished(16), finished(15.01, status=Status.ERROR)]
        recent = [finished(14.99), finished(1, status=Status.ERROR)]
        assert jobs_remove_old(now=NOW) == 2
        assert remaining() == {job.id for job in recent}
        assert all(not OrchestrationJob.objects.filter(id=job.id).exists() for job in old)

    def test_it_never_removes_pending_or_running_jobs(self, settings):
        settings.HISTORY_MAX_AGE_DAYS = 1
        ancient = NOW - dt.timedelta(days=365)
        kept = [make_push_job(status=Status.PENDING, created_at=ancient, started_at=None,
                              finished_at=None),
                make_push_job(status=Status.IN_PROGRESS, created_at=ancient,
                              started_at=ancient, finished_at=None),
                # a running job with a stray finish time is still running
                make_push_job(status=Status.IN_PROGRESS, created_at=ancient,
                              started_at=ancient, finished_at=ancient)]
        assert jobs_remove_old(now=NOW) == 0
        assert remaining() == {job.id for job in kept}

    def test_zero_days_keeps_every_job(self, settings):
        settings.HISTORY_MAX_AGE_DAYS = 0
        jobs = [finished(10_000), finished(400, status=Status.ERROR)]
        assert jobs_remove_old(now=NOW) == 0
        assert remaining() == {job.id for job in jobs}

    def test_it_removes_in_batches_until_none_is_left(self, settings,
                                                      django_assert_num_queries):
        settings.HISTORY_MAX_AGE_DAYS = 15
        for n in range(7):
            finished(20 + n)
        keep = finished(2)
        # three batches of at most 3: each one DELETE statement
        with django_assert_num_queries(3):
            assert jobs_remove_old(now=NOW, batch_size=3) == 7
        assert remaining() == {keep.id}

    def test_it_stops_at_the_bound_of_one_run(self, settings):
        settings.HISTORY_MAX_AGE_DAYS = 15
        olds = [finished(20 + n) for n in range(5)]
        assert jobs_remove_old(now=NOW, batch_size=2, max_batches=2) == 4
        # the oldest go first
        assert remaining() == {olds[0].id}
        assert jobs_remove_old(now=NOW, batch_size=2, max_batches=2) == 1

    def test_the_periodic_task_uses_the_setting(self, settings):
        settings.HISTORY_MAX_AGE_DAYS = 15
        recent = make_job(finished_at=timezone.now() - dt.timedelta(days=14))
        make_job(finished_at=timezone.now() - dt.timedelta(days=16))
        assert remove_old_jobs_task.delay().get() == 1
        assert remaining() == {recent.id}
        entry = CELERY_BEAT_SCHEDULE["remove-old-jobs"]
        assert entry["task"] == remove_old_jobs_task.name == "orchestration.remove_old_jobs"


@pytest.mark.parametrize("value", ["-1", "soon"])
def test_an_invalid_max_age_stops_the_start(value):
    assert_start_refused("HISTORY_MAX_AGE_DAYS", HISTORY_MAX_AGE_DAYS=value)
