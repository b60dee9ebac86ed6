import uuid

from django.db import models
from django.utils import timezone


class NotificationDelivery(models.Model):
    """One push notification to one subscriber: the outbox row and the record of its attempts.

    It is written in the transaction of the change that caused it, so a committed change always
    has its notification, and it outlives the broker and the worker that send it. The
    subscription is referenced by id only: this app knows nothing of subscriptions."""

    class Protocol(models.TextChoices):
        HTTP = "HTTP"
        HTTPS = "HTTPS"
        MQTT = "MQTT"
        MQTTS = "MQTTS"

    class Status(models.TextChoices):
        PENDING = "PENDING"  # waiting for its (next) attempt at next_attempt_at
        SENDING = "SENDING"  # claimed by a worker at claimed_at
        DELIVERED = "DELIVERED"
        FAILED = "FAILED"  # permanently: no more attempts
        CANCELLED = "CANCELLED"  # superseded, or its subscription went away

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    subscription_id = models.UUIDField()
    receiver = models.CharField(
        max_length=63, blank=True, default="",
        help_text="The consumer the notification is for (given by the caller; empty on rows "
                  "written before it was recorded).")
    protocol = models.CharField(max_length=8, choices=Protocol.choices)
    properties = models.JSONField(
        default=dict,
        help_text="HTTP(S): address, port, method, path. MQTT(S): topic. Keys in lower case.",
    )
    payload = models.JSONField(help_text="The exact message body sent.")
    expires_at = models.DateTimeField(
        null=True, blank=True, help_text="The subscription's expiry: never sent after it."
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True, default="")
    next_attempt_at = models.DateTimeField(default=timezone.now)
    claimed_at = models.DateTimeField(
        null=True, blank=True, help_text="When the current claim was taken: its fencing token.")
    heartbeat_at = models.DateTimeField(
        null=True, blank=True,
        help_text="Renewed while a worker is sending; the claim is dead once it is older than "
                  "the sending lease.")
    destination = models.CharField(
        max_length=300, blank=True, default="",
        help_text="HTTP(S): host:port, the unit of the concurrency limit and the circuit "
                  "breaker. Empty for MQTT (one broker).")
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "notification deliveries"
        ordering = ["-created_at"]
        # Every row written, and every change of its status, writes each index whose
        # predicate it meets: those that only unfinished rows, or only HTTP rows, are asked
        # about hold only those (docs/decisions.md, "Push at scale").
        indexes = [
            # The sweeper's two queries (due PENDING rows, SENDING rows with an old claim),
            # the backlog gauge, the admin's view of the failed ones.
            models.Index(fields=["status", "next_attempt_at"], name="delivery_status_due",
                         condition=models.Q(status__in=["PENDING", "SENDING", "FAILED"])),
            models.Index(fields=["created_at"], name="delivery_created_at"),
            # The admin's ordering by consumer (its search, a substring, reads no index).
            models.Index(fields=["receiver"], name="delivery_receiver"),
            # Sends in flight per HTTP destination (the concurrency limit); MQTT has none.
            models.Index(fields=["destination", "status"], name="delivery_destination_status",
                         condition=~models.Q(destination="")),
            # A subscription's deliveries from a time on: is there a newer one (the send's
            # check), cancelling them. Its unfinished ones have their own index (superseding
            # a pending one at every push), so neither reads the subscription's history.
            models.Index(fields=["subscription_id", "created_at"], name="delivery_subscription"),
            models.Index(fields=["subscription_id"], name="delivery_unfinished",
                         condition=models.Q(status__in=["PENDING", "SENDING"])),
            # Its deliveries being sent, by time: the send's "is an older one in flight" check
            # (at every send). The unfinished index answers it too, but a fan-out's backlog
            # made that choice marginal for the planner against ANDing two whole indexes.
            models.Index(fields=["subscription_id", "created_at"], name="delivery_in_flight",
                         condition=models.Q(status="SENDING")),
        ]

    def __str__(self) -> str:
        return f"{self.protocol} {self.receiver or self.subscription_id} {self.status}"


class NotificationDestination(models.Model):
    """The circuit breaker of one HTTP(S) destination (host:port), shared by every worker.

    Its row is also the lock under which a send to the destination is claimed, so the
    concurrency limit holds across processes."""

    key = models.CharField(max_length=300, primary_key=True)
    consecutive_failures = models.PositiveIntegerField(default=0)
    open_until = models.DateTimeField(
        null=True, blank=True,
        help_text="Set while the breaker is open (sends deferred until then); after it, one "
                  "probe is let through.")
    answering_since = models.DateTimeField(
        null=True, blank=True,
        help_text="Since when every send to it was answered; empty for a destination that "
                  "has never answered or whose last send failed. Sends to those share "
                  "NOTIFY_HTTP_UNPROVEN_MAX_IN_FLIGHT.")
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.key
