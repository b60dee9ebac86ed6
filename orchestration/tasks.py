"""Celery tasks of the orchestration app (discovered by config.celery's autodiscover_tasks)."""
from celery import shared_task


@shared_task(name="orchestration.measure_interface_latency")
def measure_interface_latency_task() -> int:
    """Periodic (Celery beat, QOS_PROBE_INTERVAL_SECONDS, scheduled only when QOS_ENABLED):
    refresh the latency of every live interface so pull can filter on `maxLatencyMs` without
    touching the network. Returns how many interfaces were probed."""
    from orchestration.pull.latency import interfaces_measure

    return interfaces_measure()


@shared_task(name="orchestration.remove_expired_locks_and_tokens")
def remove_expired_locks_and_tokens_task() -> dict[str, int]:
    """Periodic (Celery beat): drop ended reservations and expired authorization tokens.
    Pull already ignores both; this keeps the tables small."""
    from django.utils import timezone

    from orchestration.pull.reservations import locks_remove_expired
    from orchestration.tokens.services import tokens_remove_expired

    now = timezone.now()
    return {"locks": locks_remove_expired(now=now), "tokens": tokens_remove_expired(now=now)}


@shared_task(name="orchestration.remove_old_jobs")
def remove_old_jobs_task() -> int:
    """Periodic (Celery beat, every 5 minutes): history retention, HISTORY_MAX_AGE_DAYS.
    Returns how many jobs were deleted."""
    from orchestration.history.retention import jobs_remove_old

    return jobs_remove_old()


@shared_task(name="orchestration.compact_job_counts")
def compact_job_counts_task() -> int:
    """Periodic (Celery beat, every 30 s): fold the job count delta rows that the job
    table's triggers write (orchestration.history.job_counts) into one row per type and status."""
    from orchestration.history.job_counts import job_counts_compact

    return job_counts_compact()


@shared_task(name="orchestration.prune_snapshot_changes")
def prune_snapshot_changes_task() -> int:
    """Periodic (Celery beat, every minute): the pull snapshot's change feed keeps the rows
    seen in the last CHANGE_KEEP_SECONDS (orchestration.snapshot.changes). Returns how many
    rows were deleted."""
    from orchestration.snapshot.changes import changes_prune

    return changes_prune()
