"""History retention: finished jobs older than HISTORY_MAX_AGE_DAYS are deleted, in batches
(reference-simple §8.3 step 2, docs/history.md)."""
import datetime as dt

from django.conf import settings

from database.retention import rows_remove_old
from orchestration.models import OrchestrationJob

FINISHED = (OrchestrationJob.Status.DONE, OrchestrationJob.Status.ERROR)
BATCH_SIZE = 2000
MAX_BATCHES = 50  # per run: at most 100 000 rows, the rest at the next run


def jobs_remove_old(*, now: dt.datetime | None = None, batch_size: int = BATCH_SIZE,
                    max_batches: int = MAX_BATCHES) -> int:
    """Delete DONE and ERROR jobs whose `finished_at` is more than HISTORY_MAX_AGE_DAYS days
    before `now`; PENDING and IN_PROGRESS jobs are never deleted, and 0 days keeps every job.
    In batches of at most `batch_size` jobs, the oldest first (read through the finished_at
    index), each one short statement, so the table is never locked for long. Returns how
    many jobs were deleted."""
    return rows_remove_old(OrchestrationJob.objects.filter(status__in=FINISHED),
                           age_field="finished_at", max_age_days=settings.HISTORY_MAX_AGE_DAYS,
                           batch_size=batch_size, max_batches=max_batches, now=now)
