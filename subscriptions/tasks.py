import datetime as dt
import logging

from celery import shared_task

# The name the poll's log lines had when the task lived in serviceregistry/tasks.py.
_poll_logger = logging.getLogger("serviceregistry.tasks")


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


@shared_task(name="serviceregistry.poll_instances")
def poll_instances_task() -> int:
    """Periodic (Celery beat, SERVICE_REGISTRY_POLL_SECONDS, scheduled only with
    SERVICE_REGISTRY_URL): record the ServiceRegistry instances behind live subscriptions that
    changed since the last poll as catalog changes (serviceregistry.polling, which cannot ask
    for the subscriptions itself). Returns how many changed; a failing ServiceRegistry is
    logged and the next poll tries again (nothing is lost)."""
    from django.conf import settings

    from clients.serviceregistry import ServiceRegistryUnavailable
    from serviceregistry.polling import instances_poll

    try:
        return instances_poll(_live_targets)
    except ServiceRegistryUnavailable as error:
        _poll_logger.warning("ServiceRegistry poll failed (next in %s s): %s",
                             settings.SERVICE_REGISTRY_POLL_SECONDS, error.message)
        return 0


def _live_targets(now: dt.datetime):
    """The consumers of the subscriptions alive at `now` (a query, evaluated by the poll)."""
    from django.db.models import Q

    from subscriptions.models import Subscription

    return (Subscription.objects.filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
            .values_list("target", flat=True).distinct())
