"""A nudge to the subscriptions' change processing after a commit that changed rules or
instances. Only a nudge: the changes are in the feed the database writes, which beat reads
every 2 s anyway, so a missing nudge delays a push, never loses it. The task is asked for by
name; the store does not import the subscriptions app.

The round runs SUBSCRIPTION_QUIET_SECONDS after the change; a round that finds the burst of
changes still going on asks for itself again when it will have settled (`processing_later`,
called by subscriptions/tasks.py)."""
import logging
from collections.abc import Callable
from time import monotonic

from celery import current_app
from django.conf import settings
from django.db import transaction

logger = logging.getLogger(__name__)


_TASK = "subscriptions.process_changes"
# Without a broker: the in-process scheduler's `run_soon` (config/scheduler.py), registered
# when it starts (config sits above the store and is not imported from here).
in_process_runner: Callable[..., None] | None = None


def processing_nudge() -> None:
    """Once the current transaction commits, ask for `subscriptions.process_changes`
    SUBSCRIPTION_QUIET_SECONDS after this call (the writes follow it): the quiet period runs
    from the change, as the round's own check counts it (by the feed's `written_at`), not
    from the commit. A round that comes early for a long transaction's last writes finds
    them unsettled and asks for itself again."""
    called = monotonic()
    transaction.on_commit(lambda: processing_later(
        max(0.0, settings.SUBSCRIPTION_QUIET_SECONDS - (monotonic() - called))))


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
