from celery import shared_task


@shared_task(name="subscriptions.process_changes", acks_late=True)
def process_changes_task() -> int:
    """Evaluate the subscriptions that catalog or rule changes may have affected (enqueued
    after each change commits, and by beat as a safety net). Idempotent."""
    from subscriptions.services import changes_process

    return changes_process()


@shared_task(name="subscriptions.remove_expired")
def remove_expired_subscriptions_task() -> int:
    from subscriptions.services import subscriptions_remove_expired

    return subscriptions_remove_expired()


@shared_task(name="subscriptions.run_push_job", acks_late=True)
def run_push_job_task(job_id: str) -> str | None:
    """Run one push job queued by push management's trigger (enqueued after the commit that
    wrote it, and again by the sweep when it stays PENDING). Idempotent: the job is claimed,
    so a duplicate run does nothing."""
    from subscriptions.push_jobs import push_job_run

    return push_job_run(job_id=job_id)


@shared_task(name="subscriptions.sweep_push_jobs")
def sweep_push_jobs_task() -> int:
    """Periodic (PUSH_JOB_SWEEP_INTERVAL_SECONDS): no push job stays stuck."""
    from subscriptions.push_jobs import push_jobs_sweep

    return push_jobs_sweep()


def enqueue_change_processing() -> None:
    """Listener of store.changes: process soon, after a short delay so that a burst of
    changes is evaluated once. A broker that is down loses nothing: the changes stay in the
    outbox and beat processes them. Without a broker (eager tasks) nothing is run here: the
    work would block the operator's request that made the change (a notification to an
    unreachable endpoint waits for its timeout); the in-process scheduler picks it up."""
    import logging

    from django.conf import settings

    if process_changes_task.app.conf.task_always_eager:
        return
    try:
        process_changes_task.apply_async(countdown=settings.SUBSCRIPTION_COALESCE_SECONDS)
    except Exception:
        logging.getLogger(__name__).warning(
            "Could not enqueue change processing; beat will pick the changes up", exc_info=True)
