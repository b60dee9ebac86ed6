"""Celery tasks of the subscriptions app (registered in every process by subscriptions/apps.py,
discovered by config.celery's autodiscover_tasks in workers)."""
from celery import shared_task

from subscriptions.push_jobs import RUN_PUSH_JOB_TASK, push_job_run, push_jobs_sweep
from subscriptions.services.evaluation import changes_process
from subscriptions.services.subscribing import subscriptions_remove_expired


@shared_task(name="subscriptions.process_changes", acks_late=True)
def process_changes_task() -> int:
    """Evaluate the subscriptions that catalog or rule changes may have affected (enqueued
    after each change commits, and by beat as a safety net). Idempotent."""
    return changes_process()


@shared_task(name="subscriptions.remove_expired")
def remove_expired_subscriptions_task() -> int:
    return subscriptions_remove_expired()


@shared_task(name=RUN_PUSH_JOB_TASK, acks_late=True)
def run_push_job_task(job_id: str) -> str | None:
    """Run one push job queued by push management's trigger (enqueued after the commit that
    wrote it, and again by the sweep when it stays PENDING). Idempotent: the job is claimed,
    so a duplicate run does nothing."""
    return push_job_run(job_id=job_id)


@shared_task(name="subscriptions.sweep_push_jobs")
def sweep_push_jobs_task() -> int:
    """Periodic (PUSH_JOB_SWEEP_INTERVAL_SECONDS): no push job stays stuck."""
    return push_jobs_sweep()
