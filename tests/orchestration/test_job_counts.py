"""The job counts kept by the job table's triggers (orchestration.history.job_counts) against the
table itself: every kind of write, the compaction, and the history query's `count`."""
import datetime as dt

import pytest
from django.db import connection, transaction

from orchestration.history.job_counts import job_count, job_counts_compact
from orchestration.history.job_rows import job_rows
from orchestration.history.job_serializers import OrchestrationJobSerializer
from orchestration.history.retention import jobs_remove_old
from orchestration.models import JobCountDelta, OrchestrationJob
from tests.orchestration.history_helpers import make_job, make_push_job, query_history

Status, Type = OrchestrationJob.Status, OrchestrationJob.Type


def assert_counts_match_the_table() -> None:
    for status in [(), *([s] for s in Status.values), (Status.PENDING, Status.IN_PROGRESS)]:
        for job_type in (None, *Type.values):
            rows = OrchestrationJob.objects.all()
            if status:
                rows = rows.filter(status__in=status)
            if job_type:
                rows = rows.filter(type=job_type)
            assert job_count(statuses=status, type=job_type) == rows.count(), (status, job_type)


@pytest.mark.django_db
class JobCountTests:
    def test_it_counts_inserts_of_one_and_of_many(self):
        make_job()
        make_push_job(status=Status.PENDING, started_at=None, finished_at=None)
        OrchestrationJob.objects.bulk_create([
            OrchestrationJob(type=Type.PUSH, status=Status.ERROR, requester="A", target="B",
                             created_at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
            for _ in range(25)])
        assert job_count() == 27
        assert job_count(statuses=[Status.ERROR], type=Type.PUSH) == 25
        assert_counts_match_the_table()

    def test_it_follows_status_changes_and_ignores_updates_that_change_none(self):
        jobs = [make_push_job(minute=m, status=Status.PENDING) for m in range(4)]
        OrchestrationJob.objects.filter(pk__in=[j.pk for j in jobs[:3]]).update(
            status=Status.IN_PROGRESS)
        OrchestrationJob.objects.filter(pk=jobs[0].pk).update(status=Status.DONE)
        rows_before = JobCountDelta.objects.count()
        OrchestrationJob.objects.update(message="unchanged status")
        assert JobCountDelta.objects.count() == rows_before  # a no-op for the counts
        assert job_count(statuses=[Status.PENDING]) == 1
        assert job_count(statuses=[Status.IN_PROGRESS]) == 2
        assert job_count(statuses=[Status.DONE], type=Type.PUSH) == 1
        assert_counts_match_the_table()

    def test_it_counts_deletes_including_retention(self, settings):
        settings.HISTORY_MAX_AGE_DAYS = 1
        for minute in range(5):
            make_job(minute=minute)
        make_job(minute=10, status=Status.ERROR, finished_at=dt.datetime.now(dt.UTC))
        OrchestrationJob.objects.filter(created_at__lt=make_job(minute=1).created_at).delete()
        assert jobs_remove_old(batch_size=2) == 5  # in three batches
        assert job_count() == 1
        assert_counts_match_the_table()

    def test_a_rolled_back_write_leaves_the_counts_alone(self):
        make_job()
        with pytest.raises(RuntimeError), transaction.atomic():
            make_job(minute=1)
            OrchestrationJob.objects.update(status=Status.ERROR)
            raise RuntimeError("roll back")
        assert job_count() == 1 and job_count(statuses=[Status.ERROR]) == 0

    def test_compaction_keeps_the_sums_in_one_row_per_type_and_status(self):
        for minute in range(6):
            make_job(minute=minute, type=Type.PUSH if minute % 2 else Type.PULL)
        OrchestrationJob.objects.filter(type=Type.PUSH).update(status=Status.ERROR)
        assert JobCountDelta.objects.count() > 2
        assert job_counts_compact() == 2  # PULL DONE and PUSH ERROR; PUSH DONE sums to 0
        assert job_count(type=Type.PULL) == 3 and job_count(statuses=[Status.ERROR]) == 3
        assert_counts_match_the_table()

    def test_truncating_the_table_empties_the_counts(self):
        make_job()
        with connection.cursor() as cursor:
            cursor.execute(f"TRUNCATE {OrchestrationJob._meta.db_table}")
        assert job_count() == 0 and not JobCountDelta.objects.exists()


@pytest.mark.django_db
class HistoryCountTests:
    def test_the_query_counts_status_and_type_filters_from_the_counts(self, api,
                                                                     django_assert_num_queries):
        for minute in range(7):
            make_job(minute=minute, status=Status.ERROR if minute < 3 else Status.DONE)
        body = {"statuses": ["ERROR"], "type": "PULL",
                "pagination": {"page": 0, "size": 2}}
        with django_assert_num_queries(2):  # the page, and the sum of the count rows
            response = query_history(api, body)
        assert response.json()["count"] == 3 and len(response.json()["entries"]) == 2
        assert query_history(api, {"pagination": {"page": 1, "size": 3}}).json()["count"] == 7

    def test_a_selective_filter_is_counted_from_the_table(self, api):
        for minute in range(5):
            make_job(minute=minute, requester="Consumer2" if minute < 4 else "Consumer1")
        body = {"requesterSystems": ["Consumer2"], "statuses": ["DONE"],
                "pagination": {"page": 0, "size": 1}}
        assert query_history(api, body).json()["count"] == 4


@pytest.mark.django_db
class JobRowsTests:
    def test_the_database_built_rows_equal_the_serializer_output(self):
        """orchestration.history.job_rows builds the entries in SQL on PostgreSQL; they must be what
        OrchestrationJobSerializer writes, for every kind of value."""
        make_job(minute=0)  # whole seconds: no fraction
        make_job(minute=1, created_at=dt.datetime(2026, 1, 1, 0, 1, 0, 123, tzinfo=dt.UTC),
                 message='quotes " and \\ and unicode ✓ and\nnew line')
        make_push_job(minute=2, status=Status.PENDING, started_at=None, finished_at=None,
                      message="")
        make_job(minute=3, service_definition=None, status=Status.ERROR)

        def ordered():
            return OrchestrationJob.objects.order_by("-created_at", "-id")

        expected = [dict(entry) for entry in
                    OrchestrationJobSerializer(list(ordered()), many=True).data]
        assert job_rows(ordered()[0:10]) == expected
        assert job_rows(ordered()[1:3]) == expected[1:3]
        assert expected[3]["createdAt"] == "2026-01-01T00:00:00Z"
        assert expected[2]["createdAt"] == "2026-01-01T00:01:00.000123Z"
        assert expected[1]["startedAt"] is None and expected[1]["subscriptionId"]
