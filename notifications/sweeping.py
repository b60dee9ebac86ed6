"""The sweeper: the safety net that makes delivery at least once (docs/subscriptions.md, "Lost
tasks and dead workers"). It sends nothing itself while handing over works, so that a silent
HTTP endpoint cannot hold it: due rows go where the outbox hands new ones
(notifications/handover.py), grouped the same way."""
import logging
import time
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from notifications.handover import deliveries_enqueue, handover_groups
from notifications.models import NotificationDelivery
from notifications.services import LEASE_EXPIRED, Status, deliveries_send

logger = logging.getLogger(__name__)

# At most this many due rows are read per sweep; the time budget usually ends it sooner.
SWEEP_BATCH = 1000


def deliveries_sweep() -> int:
    """Hand over the due deliveries. With a broker only rows due for a whole interval are
    handed over (their own task had that long to claim them), each at most once per
    interval; when the broker refuses, the sweeper sends them itself. Returns how many due
    deliveries it handed over (or tried)."""
    now = timezone.now()
    released = _release_expired_claims(now=now)
    if released:
        logger.warning("%d notification deliveries were left SENDING; retrying them", released)
    due_before = now
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        due_before -= timedelta(seconds=settings.NOTIFICATION_SWEEP_INTERVAL_SECONDS)
    due = NotificationDelivery.objects.filter(status=Status.PENDING,
                                              next_attempt_at__lte=due_before)
    rows = list(due.order_by("next_attempt_at").values_list("id", "protocol")[:SWEEP_BATCH])
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        # Still due, but not overdue again before the next interval: handed over once per sweep.
        NotificationDelivery.objects.filter(
            id__in=[delivery_id for delivery_id, _ in rows], status=Status.PENDING,
            next_attempt_at__lte=due_before,
        ).update(next_attempt_at=now)
    started, tried = time.monotonic(), 0
    for delivery_ids, protocol in handover_groups(rows):
        # A broker that refuses can take a while per hand-over: the next sweep goes on.
        if time.monotonic() - started >= settings.NOTIFICATION_SWEEP_INTERVAL_SECONDS:
            break
        if not deliveries_enqueue(delivery_ids=delivery_ids, protocol=protocol):
            deliveries_send(delivery_ids)
        tried += len(delivery_ids)
    return tried


def _release_expired_claims(*, now: datetime) -> int:
    """A SENDING row whose heartbeat is older than the lease lost its worker mid-attempt. The
    attempt counts (it may even have arrived: delivery is at least once) and the row is due
    again, overdue since its claim."""
    lease = timedelta(seconds=settings.NOTIFICATION_SENDING_LEASE_SECONDS)
    return NotificationDelivery.objects.filter(
        status=Status.SENDING, heartbeat_at__lt=now - lease
    ).update(status=Status.PENDING, attempts=F("attempts") + 1, last_error=LEASE_EXPIRED,
             next_attempt_at=F("claimed_at"), claimed_at=None, heartbeat_at=None,
             updated_at=now)
