"""A nudge to the subscriptions' change processing after a commit that changed rules or
instances. Only a nudge: the changes are in the feed the database writes, which beat reads
every 2 s anyway, so a missing nudge delays a push, never loses it. The task is asked for by
name; the store does not import the subscriptions app."""
import logging

from celery import current_app
from django.conf import settings
from django.db import transaction

logger = logging.getLogger(__name__)


def processing_nudge() -> None:
    """Once the current transaction commits, ask for `subscriptions.process_changes` a moment
    later, so that a burst of changes is evaluated once. Without a broker (eager tasks)
    nothing is sent: the work would block the request that made the change."""
    transaction.on_commit(_send)


def _send() -> None:
    if current_app.conf.task_always_eager:
        return
    try:
        current_app.send_task("subscriptions.process_changes",
                              countdown=settings.SUBSCRIPTION_COALESCE_SECONDS)
    except Exception:
        logger.warning("Could not enqueue change processing; beat will pick the changes up",
                       exc_info=True)
