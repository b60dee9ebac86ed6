import uuid

from django.db import models
from django.db.models.functions import Now


class OrchestrationJob(models.Model):
    """History: one row per orchestration (a pull, or a push of a subscription). Pulls and
    automatic pushes are written once, when they have finished; a push triggered through push
    management is written PENDING when queued and moves through IN_PROGRESS to DONE or ERROR."""

    class Type(models.TextChoices):
        PULL = "PULL"
        PUSH = "PUSH"

    class Status(models.TextChoices):
        PENDING = "PENDING"
        IN_PROGRESS = "IN_PROGRESS"
        DONE = "DONE"
        ERROR = "ERROR"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    type = models.CharField(max_length=8, choices=Type.choices)
    status = models.CharField(max_length=16, choices=Status.choices)
    requester = models.CharField(max_length=63)
    target = models.CharField(max_length=63)
    service_definition = models.CharField(max_length=63, null=True, blank=True)
    subscription_id = models.UUIDField(null=True, blank=True)
    result_count = models.PositiveIntegerField(default=0)
    message = models.TextField(blank=True)
    created_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        # The history query's filters, each in the default order (newest first, ties by id),
        # so that a page is read straight from an index and a count is an index-only scan;
        # chosen by measurement over a million jobs (bench/history_query.py,
        # docs/performance.md). finished_at also serves the retention task.
        indexes = [
            models.Index(fields=["created_at", "id"], name="job_created_at"),
            models.Index(fields=["status", "created_at", "id"], name="job_status"),
            models.Index(fields=["requester", "created_at", "id"], name="job_requester"),
            models.Index(fields=["target", "created_at", "id"], name="job_target"),
            models.Index(fields=["service_definition", "created_at", "id"],
                         name="job_service_definition"),
            models.Index(fields=["subscription_id", "created_at", "id"],
                         name="job_subscription",
                         condition=models.Q(subscription_id__isnull=False)),
            models.Index(fields=["started_at", "id"], name="job_started_at"),
            models.Index(fields=["finished_at", "id"], name="job_finished_at"),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.requester} {self.service_definition or '*'} {self.status}"


class JobCountDelta(models.Model):
    """How many jobs there are per type and status, as rows to add up (PostgreSQL only),
    written by triggers on the job table: every writer pays one small INSERT and nobody waits
    for a shared counter row (orchestration/history/job_counts.py)."""

    type = models.CharField(max_length=8)
    status = models.CharField(max_length=16)
    n = models.BigIntegerField()

    def __str__(self) -> str:
        return f"{self.type} {self.status} {self.n:+d}"


class OrchestrationLock(models.Model):
    """A reservation: `owner` has exclusive use of the instance until `expires_at`. One lock
    per instance, enforced by the database, so concurrent reservations cannot both win."""

    service_instance_id = models.CharField(max_length=160, unique=True)
    owner = models.CharField(max_length=63)
    expires_at = models.DateTimeField()
    created_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["expires_at"], name="lock_expires_at")]

    def __str__(self) -> str:
        return f"{self.service_instance_id} → {self.owner}"


class AuthorizationToken(models.Model):
    """An authorization token issued by pull for one consumer, provider, service definition
    and operation (scope). Only its SHA-256 is stored."""

    class TokenType(models.TextChoices):
        TIME_LIMITED_TOKEN = "TIME_LIMITED_TOKEN"
        USAGE_LIMITED_TOKEN = "USAGE_LIMITED_TOKEN"
        SELF_CONTAINED_TOKEN = "SELF_CONTAINED_TOKEN"

    token_hash = models.CharField(max_length=64, unique=True)
    token_type = models.CharField(max_length=32, choices=TokenType.choices)
    variant = models.CharField(max_length=40)
    consumer = models.CharField(max_length=63)
    provider = models.CharField(max_length=63)
    target = models.CharField(max_length=63, help_text="Service definition.")
    scope = models.CharField(max_length=63, help_text="Operation, or the service definition.")
    usage_limit = models.PositiveIntegerField(null=True, blank=True)
    usage_left = models.PositiveIntegerField(null=True, blank=True)
    expires_at = models.DateTimeField()
    created_at = models.DateTimeField()

    class Meta:
        indexes = [
            models.Index(fields=["consumer", "provider", "target", "scope"],
                         name="token_grant"),
            models.Index(fields=["expires_at"], name="token_expires_at"),
        ]

    def __str__(self) -> str:
        return f"{self.token_type} {self.consumer}→{self.provider} {self.target}/{self.scope}"


class SnapshotChange(models.Model):
    """A change of what pull reads (rules of `consumer`, or instance `service_instance_id`: its
    catalog entry, interfaces or reservation; neither: everything), written by database
    triggers in the changing transaction, so that no write path can forget it; read by the
    pull snapshots and the subscriptions (orchestration/snapshot/changes.py). `xid` is the
    writing transaction (PostgreSQL); `written_at` when the writing statement began (the
    database's clock), by which change processing waits for a burst to end."""

    id = models.BigAutoField(primary_key=True)
    xid = models.BigIntegerField(null=True, blank=True)
    consumer = models.CharField(max_length=63, null=True, blank=True)
    service_instance_id = models.CharField(max_length=160, null=True, blank=True)
    seen_at = models.DateTimeField(null=True, blank=True)
    written_at = models.DateTimeField(db_default=Now())

    class Meta:
        indexes = [models.Index(fields=["xid"], name="snapshot_change_xid"),
                   models.Index(fields=["seen_at"], name="snapshot_change_seen_at")]

    def __str__(self) -> str:
        return f"change {self.pk}: {self.consumer or self.service_instance_id or 'everything'}"


class BulkChangeConsumer(models.Model):
    """A consumer whose rules a bulk write changed (database/bulk_write.py): the one change
    such a write records in the feed (`change_id`, a `SnapshotChange` meaning everything)
    lists them here, written by the same triggers, so that a pull snapshot reads again only
    their rules and answers every other consumer from memory meanwhile
    (orchestration/snapshot/state.py). Pruned with the change."""

    pk = models.CompositePrimaryKey("change_id", "consumer")
    change_id = models.BigIntegerField()
    consumer = models.CharField(max_length=63)

    def __str__(self) -> str:
        return f"change {self.change_id}: {self.consumer}"
