"""A nudge to the subscriptions' change processing after a commit that changed rules or
instances. Only a nudge: the changes are in the feed the database writes, which beat reads
every 2 s anyway, so a missing nudge delays a push, never loses it. The task is asked for by
name; the store does not import the subscriptions app.

The round runs at the commit and flags what the change concerns; while the burst of changes
goes on (SUBSCRIPTION_QUIET_SECONDS since the newest), it asks for itself again when the burst
will have settled (`processing_later`, called by subscriptions/tasks.py) and evaluates then."""
import logging
from collections.abc import Callable

from celery import current_app
from django.conf import settings
from django.db import transaction

logger = logging.getLogger(__name__)


_TASK = "subscriptions.process_changes"
# Without a broker: the in-process scheduler's `run_soon` (config/scheduler.py), registered
# when it starts (config sits above the store and is not imported from here).
in_process_runner: Callable[..., None] | None = None


def processing_nudge() -> None:
    """Once the current transaction commits, ask for `subscriptions.process_changes` at once:
    the round flags the subscriptions the change concerns during the quiet period, and asks
    for itself again when the burst will have settled (counted by the feed's `written_at`,
    from the change, not from the commit)."""
    transaction.on_commit(lambda: processing_later(0.0))


def processing_later(seconds: float) -> None:
    """Ask for `subscriptions.process_changes` in `seconds`. Without a broker (eager tasks)
    this process's scheduler thread runs it (`in_process_runner`, which keeps one request of
    several close together; nothing where no scheduler runs): run here and now, the work
    would block the caller, a request that made a change."""
    if current_app.conf.task_always_eager:
        if in_process_runner is not None:
            in_process_runner(_TASK, quiet=seconds,
                              max_delay=settings.SUBSCRIPTION_MAX_DELAY_SECONDS)
        return
    try:
        current_app.send_task(_TASK, countdown=seconds)
    except Exception:
        logger.warning("Could not enqueue change processing; beat will pick the changes up",
                       exc_info=True)
