"""Recording catalog and rule changes for whoever derives results from them (the
subscriptions app), without the store importing it.

`change_record()` writes a `CatalogChange` row inside the caller's transaction (so the change
and the fact that it happened commit together) and, once committed, asks for the task that
processes changes by its name, `subscriptions.process_changes`.
"""
import logging
from collections.abc import Iterable

from celery import current_app
from django.conf import settings
from django.db import transaction

from store.models import CatalogChange

logger = logging.getLogger(__name__)

PROCESS_CHANGES_TASK = "subscriptions.process_changes"


def change_record(*, consumers: Iterable[str] = (), instance_ids: Iterable[str] = ()) -> None:
    consumers, instance_ids = sorted(set(consumers)), sorted(set(instance_ids))
    if not consumers and not instance_ids:
        return
    CatalogChange.objects.create(consumers=consumers, instance_ids=instance_ids)
    transaction.on_commit(_enqueue_processing)


def _enqueue_processing() -> None:
    """Process soon, after a short delay so that a burst of changes is evaluated once. A
    broker that is down loses nothing: the changes stay in the outbox and beat processes
    them. Without a broker (eager tasks) nothing is run here: the work would block the
    operator's request that made the change (a notification to an unreachable endpoint waits
    for its timeout); the in-process scheduler picks it up."""
    if current_app.conf.task_always_eager:
        return
    try:
        current_app.send_task(PROCESS_CHANGES_TASK,
                              countdown=settings.SUBSCRIPTION_COALESCE_SECONDS)
    except Exception:
        logger.warning("Could not enqueue change processing; beat will pick the changes up",
                       exc_info=True)
