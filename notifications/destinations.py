"""Per-destination protection for HTTP(S) notifications, shared by every worker through the
database (docs/subscriptions.md, "A slow or dead destination only delays its own
notifications"): a send to host:port is only claimed under that destination's row lock, within
its in-flight limit, its circuit breaker and the shared lane of destinations not known to
answer; a delivery that may not go now is deferred (still PENDING, due later)."""
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F

from database.advisory_locks import advisory_locks
from notifications.models import NotificationDelivery, NotificationDestination

# How long a delivery waits when its destination already has its limit of sends in flight.
BUSY_RETRY_SECONDS = 1


@dataclass(frozen=True)
class Deferral:
    until: datetime
    reason: str


def destination_admit(*, key: str, now: datetime) -> Deferral | None:
    """Decide, inside the caller's transaction and holding the destination's row lock until it
    commits, whether one more send to `key` may start now. None: yes (the caller claims in the
    same transaction); otherwise until when and why it must wait."""
    destination = _locked(key, now)
    if destination.open_until is not None and destination.open_until > now:
        return Deferral(destination.open_until,
                        f"Circuit open for {key} after {destination.consecutive_failures} "
                        f"consecutive failures; waiting for the cool-down")
    in_flight = NotificationDelivery.objects.filter(
        destination=key, status=NotificationDelivery.Status.SENDING).count()
    if in_flight >= settings.NOTIFY_DESTINATION_MAX_IN_FLIGHT:
        return Deferral(now + timedelta(seconds=BUSY_RETRY_SECONDS),
                        f"Waiting: {in_flight} sends to {key} in flight "
                        f"(NOTIFY_DESTINATION_MAX_IN_FLIGHT)")
    if destination.answering_since is None:
        # One claim at a time counts and joins the lane (held until the claim commits), so
        # that claims at the same moment for different destinations cannot all get in.
        advisory_locks("notify-unproven-lane", ["lane"])
        unproven = _unproven_in_flight()
        if unproven >= settings.NOTIFY_HTTP_UNPROVEN_MAX_IN_FLIGHT:
            return Deferral(now + timedelta(seconds=BUSY_RETRY_SECONDS),
                            f"Waiting: {unproven} sends to destinations not known to answer "
                            f"in flight (NOTIFY_HTTP_UNPROVEN_MAX_IN_FLIGHT)")
    if destination.open_until is not None:
        # Half-open: this claim is the probe. Everyone else waits until it has had time to
        # fail (then the breaker re-opens) or it succeeded (then the breaker closes).
        destination.open_until = _cool_down_end(now) + timedelta(
            seconds=settings.NOTIFY_HTTP_CONNECT_TIMEOUT_SECONDS
            + settings.NOTIFY_HTTP_TIMEOUT_SECONDS)
        destination.updated_at = now
        destination.save(update_fields=["open_until", "updated_at"])
    return None


def destination_record(*, key: str, reachable: bool, now: datetime) -> None:
    """Feed the outcome of a send to the breaker. `reachable`: it was delivered, or refused
    for good (the subscriber's business, not a sign that the destination is down); otherwise
    a failure that counts towards opening the breaker."""
    if not key:
        return
    if reachable:
        NotificationDestination.objects.filter(key=key).exclude(
            consecutive_failures=0, open_until=None, answering_since__isnull=False
        ).update(consecutive_failures=0, open_until=None, answering_since=now, updated_at=now)
        return
    with transaction.atomic():
        destination = _locked(key, now)
        destination.consecutive_failures = F("consecutive_failures") + 1
        destination.answering_since = None
        destination.updated_at = now
        destination.save(update_fields=["consecutive_failures", "answering_since",
                                        "updated_at"])
        destination.refresh_from_db(fields=["consecutive_failures"])
        if destination.consecutive_failures >= settings.NOTIFY_BREAKER_FAILURES:
            destination.open_until = _cool_down_end(now)
            destination.save(update_fields=["open_until"])


def _unproven_in_flight() -> int:
    """Sends in flight to HTTP(S) destinations that are not known to answer."""
    answering = NotificationDestination.objects.filter(
        answering_since__isnull=False).values("key")
    return (NotificationDelivery.objects.filter(status=NotificationDelivery.Status.SENDING)
            .exclude(destination="").exclude(destination__in=answering).count())


def _locked(key: str, now: datetime) -> NotificationDestination:
    destination, _ = NotificationDestination.objects.select_for_update().get_or_create(
        key=key, defaults={"updated_at": now})
    return destination


def _cool_down_end(now: datetime) -> datetime:
    return now + timedelta(seconds=settings.NOTIFY_BREAKER_COOLDOWN_SECONDS)
