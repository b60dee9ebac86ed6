"""History retention: finished jobs older than HISTORY_MAX_AGE_DAYS are deleted, in batches
(reference-simple §8.3 step 2, docs/history.md)."""
import datetime as dt

from django.conf import settings
from django.utils import timezone

from config.batch_delete import delete_in_batches

from orchestration.models import OrchestrationJob

FINISHED = (OrchestrationJob.Status.DONE, OrchestrationJob.Status.ERROR)
BATCH_SIZE = 2000
MAX_BATCHES = 50  # per run: at most 100 000 rows, the rest at the next run


def jobs_remove_old(*, now: dt.datetime | None = None, batch_size: int = BATCH_SIZE,
                    max_batches: int = MAX_BATCHES) -> int:
    """Delete DONE and ERROR jobs whose `finished_at` is more than HISTORY_MAX_AGE_DAYS days
    before `now`; PENDING and IN_PROGRESS jobs are never deleted, and 0 days keeps every job.
    Each batch of at most `batch_size` jobs (the oldest first, read through the finished_at
    index) is one short transaction, so the table is never locked for long. Returns how many
    jobs were deleted."""
    max_age = settings.HISTORY_MAX_AGE_DAYS
    if max_age == 0:
        return 0
    cutoff = (now or timezone.now()) - dt.timedelta(days=max_age)
    old = OrchestrationJob.objects.filter(status__in=FINISHED, finished_at__lt=cutoff)
    return delete_in_batches(old, oldest_first_by="finished_at", batch_size=batch_size,
                             max_batches=max_batches)
