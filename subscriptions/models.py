import uuid

from django.db import models
from django.db.models.fields.json import KeyTransform

from notifications.models import NotificationDelivery

# The notify protocols whose property `topic` is an MQTT topic of the service's broker.
MQTT_PROTOCOLS = ("MQTT", "MQTTS")


class Subscription(models.Model):
    """A standing pull: its result is pushed to the notify interface whenever it changes.
    The same owner, target and service definition identify one subscription (`identity_key`,
    unique): subscribing again overwrites it in place and keeps its id. A consumer's own
    subscriptions have owner = target; push management subscribes for any target."""

    Protocol = NotificationDelivery.Protocol  # the notify protocols, declared once

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.CharField(max_length=63)
    target = models.CharField(max_length=63, help_text="The consumer orchestrated for.")
    service_definition = models.CharField(max_length=63, null=True, blank=True)
    identity_key = models.CharField(max_length=192, unique=True, editable=False)
    orchestration_request = models.JSONField(default=dict)
    notify_protocol = models.CharField(max_length=8, choices=Protocol.choices)
    notify_properties = models.JSONField(default=dict)
    duration = models.PositiveIntegerField(null=True, blank=True, help_text="Seconds.")
    expires_at = models.DateTimeField(null=True, blank=True)
    # Whether it awaits evaluation is an `EvaluationFlag` row, not a column: see there.
    last_fingerprint = models.CharField(max_length=64, blank=True, editable=False)
    last_pushed_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(editable=False)
    updated_at = models.DateTimeField(editable=False)

    class Meta:
        indexes = [
            models.Index(fields=["target"], name="subscription_target"),
            models.Index(fields=["owner"], name="subscription_owner"),
            models.Index(fields=["created_at"], name="subscription_created_at"),
            models.Index(fields=["expires_at"], name="subscription_expires_at"),
            # Who uses a notify topic (subscriptions/notify_topics.py), read by every MQTT
            # subscribe and every answer of the MQTT interface.
            models.Index(KeyTransform("topic", "notify_properties"),
                         name="subscription_notify_topic",
                         condition=models.Q(notify_protocol__in=MQTT_PROTOCOLS)),
        ]

    def __str__(self) -> str:
        return (f"{self.owner}→{self.target} {self.service_definition or '*'} → "
                f"{self.notify_protocol}")


class EvaluationFlag(models.Model):
    """A subscription awaiting evaluation: a change in the feed concerns its target, or it
    was just written (subscriptions/services/flagging.py). Set by the change-processing
    round, which moves its `FeedCursor` past the change in the same transaction; cleared by
    the transaction that evaluated the subscription (and queued a notification if the
    result changed). See subscriptions/services/__init__.py, steps 2 and 3.

    A table of its own rather than a column of `Subscription`: flagging is an INSERT of one
    narrow row and clearing a DELETE, and the UPDATE that records a pushed result sets no
    indexed column of the subscription, so PostgreSQL can make it a HOT update (no new entry
    in each of the subscription's indexes: docs/decisions.md, "Evaluation flags").

    No foreign key in the database: its check of each flag costs as much as the INSERT
    (docs/decisions.md). A flag never outlives its subscription anyway: every writer of a
    flag holds its subscription's row lock, and deleting a subscription deletes its flag
    (`CASCADE`, done by Django)."""

    subscription = models.OneToOneField(Subscription, primary_key=True,
                                        on_delete=models.CASCADE, db_constraint=False,
                                        related_name="evaluation_flag")


class FeedCursor(models.Model):
    """Where the subscriptions stand in the change feed (orchestration/snapshot/changes.py):
    one row, locked by the processing round that reads the feed and flags the subscriptions
    concerned (subscriptions/services/evaluation.py `changes_flag`)."""

    last_id = models.BigIntegerField(default=0)
    # PostgreSQL: the transactions running at the last read (their rows may have lower ids).
    running = models.JSONField(default=list)
    read_at = models.DateTimeField(null=True)  # None: never read (every subscription is due)
    # When the oldest change flagged and not yet evaluated was written (the feed's
    # `written_at`): the burst began then, and its evaluation comes no later than
    # SUBSCRIPTION_MAX_DELAY_SECONDS after it. None: no burst waits (evaluation.py).
    pending_since = models.DateTimeField(null=True)


# The advisory-lock namespace of subscriptions by identity key (database/advisory_locks.py):
# writers of one subscription take its lock before they read it.
LOCK_NAMESPACE = "subscription"


def identity_key(owner: str, target: str, service_definition: str | None) -> str:
    return f"{owner}|{target}|{service_definition or ''}"
