"""Keeps a claim alive while its send runs, so that only a dead claimant's claim expires.

The sweeper treats a SENDING row whose heartbeat is older than NOTIFICATION_SENDING_LEASE_SECONDS
as abandoned and sends it again. A worker that is alive renews the heartbeat every third of the
lease however long its send takes, so a slow send is never handed to a second worker; a worker
that crashed stops renewing, and its notification is resent after about one lease instead of
after the longest possible send.
"""
import logging
import threading
from types import TracebackType
from uuid import UUID

from django.conf import settings
from django.db import connection
from django.utils import timezone

from notifications.models import NotificationDelivery

logger = logging.getLogger(__name__)


class ClaimHeartbeat:
    """`with ClaimHeartbeat(delivery_ids, claimed_at): send()` renews the claims taken at
    `claimed_at` (their fencing token) from a background thread until the block ends."""

    def __init__(self, delivery_ids: list[UUID], claimed_at: object) -> None:
        self._delivery_ids = delivery_ids
        self._label = self._delivery_ids[0] if len(self._delivery_ids) == 1 else \
            f"{len(self._delivery_ids)} deliveries"
        self._claimed_at = claimed_at
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"heartbeat-{self._label}",
                                        daemon=True)

    def __enter__(self) -> "ClaimHeartbeat":
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        interval = settings.NOTIFICATION_SENDING_LEASE_SECONDS / 3
        try:
            while not self._stop.wait(interval):
                renewed = NotificationDelivery.objects.filter(
                    id__in=self._delivery_ids, status=NotificationDelivery.Status.SENDING,
                    claimed_at=self._claimed_at,
                ).update(heartbeat_at=timezone.now())
                if not renewed:  # cancelled, or (after a stall) taken over: nothing to keep
                    return
        except Exception:  # noqa: BLE001 - the send goes on; at worst it is sent twice
            logger.warning("Could not renew the claim of notification delivery %s",
                           self._label, exc_info=True)
        finally:
            connection.close()  # this thread's own connection
