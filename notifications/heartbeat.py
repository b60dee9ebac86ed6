"""Keeps a claim alive while its send runs, so that only a dead claimant's claim expires: the
sweeper resends a SENDING row whose heartbeat is older than NOTIFICATION_SENDING_LEASE_SECONDS
(docs/subscriptions.md, "Lost tasks and dead workers"); a live worker renews it every third of
the lease however long its send takes."""
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from uuid import UUID

from django.conf import settings
from django.db import connection
from django.utils import timezone

from database.expressions import AnyOf
from notifications.models import NotificationDelivery

logger = logging.getLogger(__name__)


@contextmanager
def claim_heartbeat(delivery_ids: list[UUID], claimed_at: object) -> Iterator[None]:
    """`with claim_heartbeat(delivery_ids, claimed_at): send()` renews the claims taken at
    `claimed_at` (their fencing token) from a background thread until the block ends."""
    label = delivery_ids[0] if len(delivery_ids) == 1 else f"{len(delivery_ids)} deliveries"
    stop = threading.Event()

    def renew() -> None:
        try:
            while not stop.wait(settings.NOTIFICATION_SENDING_LEASE_SECONDS / 3):
                renewed = NotificationDelivery.objects.filter(
                    AnyOf("id", delivery_ids), status=NotificationDelivery.Status.SENDING,
                    claimed_at=claimed_at,
                ).update(heartbeat_at=timezone.now())
                if not renewed:  # cancelled, or (after a stall) taken over: nothing to keep
                    return
        except Exception:  # noqa: BLE001 - the send goes on; at worst it is sent twice
            logger.warning("Could not renew the claim of notification delivery %s", label,
                           exc_info=True)
        finally:
            connection.close()  # this thread's own connection

    thread = threading.Thread(target=renew, name=f"heartbeat-{label}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
