"""Celery tasks of the subscriptions app (registered in every process by subscriptions/apps.py,
discovered by config.celery's autodiscover_tasks in workers)."""
import logging

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from clients.serviceregistry import ServiceRegistryUnavailable
from serviceregistry.polling import instances_poll, systems_poll
from store.services.nudge import processing_later
from subscriptions.push_jobs import RUN_PUSH_JOB_TASK, push_job_run, push_jobs_sweep
from subscriptions.selectors import live_targets
from subscriptions.services.evaluation import (
    EVALUATE_FLAGGED_TASK,
    Flagged,
    burst_take,
    changes_flag,
    flags_settling,
    subscriptions_evaluate_flagged,
)
from subscriptions.services.subscribing import subscriptions_remove_expired

# The name the poll's log lines had when the task lived in serviceregistry/tasks.py.
_poll_logger = logging.getLogger("serviceregistry.tasks")


@shared_task(name="subscriptions.process_changes", acks_late=True)
def process_changes_task() -> int:
    """Flag the subscriptions that the changes in the feed may have affected, and evaluate
    the flagged ones once the burst of changes has ended (beat, every 2 s; nudged by the
    store's writes as they commit). While the burst goes on, the task asks for itself again
    when it will have settled: the flagging is done during the quiet period, not after it
    (docs/subscriptions.md, "When a push happens"). Idempotent."""
    flagged = changes_flag()
    if flagged is Flagged.EVERYTHING:  # a position to catch up, not a burst to wait for
        return subscriptions_evaluate_flagged(helpers=True)
    settling = flags_settling()
    if settling.wait > 0:
        processing_later(settling.wait)
        return 0
    # The round that takes the burst asks for helpers; the others join as they are.
    took = settling.pending_since is not None and burst_take(settling.pending_since)
    if not (took or settling.flagged):
        return 0
    return subscriptions_evaluate_flagged(helpers=took)


@shared_task(name=EVALUATE_FLAGGED_TASK, acks_late=True)
def evaluate_flagged_task(index: int, of: int) -> int:
    """Help a change-processing round evaluate its flagged subscriptions, starting at the
    `index`-th of `of` parts (subscriptions/services/evaluation.py
    `subscriptions_evaluate_flagged`). Idempotent: what is evaluated is no longer flagged."""
    return subscriptions_evaluate_flagged(share=(index, of))


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


@shared_task(name="serviceregistry.poll_instances")
def poll_instances_task() -> int:
    """Periodic (Celery beat, SERVICE_REGISTRY_POLL_SECONDS, scheduled only with
    SERVICE_REGISTRY_URL): record the ServiceRegistry instances behind live subscriptions that
    changed since the last poll as catalog changes (serviceregistry.polling, which cannot ask
    for the subscriptions itself), and under the flexible store the consumers whose system
    metadata changed as changes of those consumers. Returns how many changed; a failing
    ServiceRegistry is logged and the next poll tries again (nothing is lost)."""
    try:
        return instances_poll(live_targets) + len(systems_poll(live_targets(timezone.now())))
    except ServiceRegistryUnavailable as error:
        _poll_logger.warning("ServiceRegistry poll failed (next in %s s): %s",
                             settings.SERVICE_REGISTRY_POLL_SECONDS, error.message)
        return 0
