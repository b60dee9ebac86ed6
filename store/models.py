import uuid

from django.db import models
from django.db.models import Q

# PostgreSQL `integer`: a larger priority could not be stored, so it is refused up front.
MAX_PRIORITY = 2_147_483_647
UNIQUE_PRIORITY = "rule_unique_consumer_service_priority"


class Rule(models.Model):
    """An orchestration rule: `consumer` binds to the provider service instance
    `service_instance_id` with `priority` (lower is better). `service_definition` is the middle
    part of the instance id, stored to make the per-consumer lookup an index scan."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    consumer = models.CharField(max_length=63)
    service_definition = models.CharField(max_length=63, editable=False)
    service_instance_id = models.CharField("service instance id", max_length=160)
    priority = models.IntegerField()
    created_by = models.CharField(max_length=63, editable=False)
    updated_by = models.CharField(max_length=63, editable=False)
    created_at = models.DateTimeField(editable=False)
    updated_at = models.DateTimeField(editable=False)

    class Meta:
        constraints = [
            # Also the index of the pull lookup and of consumer filters.
            models.UniqueConstraint(
                fields=["consumer", "service_definition", "priority"],
                name=UNIQUE_PRIORITY,
                # Checked at once as usual, but deferrable so that modify-priorities can swap
                # priorities in place (store.services.rules; ignored by SQLite).
                deferrable=models.Deferrable.IMMEDIATE,
                violation_error_message="There is already a rule of this consumer for this "
                "service definition with this priority.",
            ),
            models.CheckConstraint(
                condition=Q(priority__gte=1) & Q(priority__lte=MAX_PRIORITY),
                name="rule_priority_positive",
            ),
        ]
        indexes = [
            models.Index(fields=["consumer", "priority"], name="rule_consumer_priority"),
            models.Index(fields=["service_definition"], name="rule_service_definition"),
            models.Index(fields=["service_instance_id"], name="rule_service_instance_id"),
            models.Index(fields=["created_by"], name="rule_created_by"),
            models.Index(fields=["created_at", "id"], name="rule_created_at"),
            models.Index(fields=["updated_at", "id"], name="rule_updated_at"),
            models.Index(fields=["priority"], name="rule_priority"),
        ]

    def __str__(self) -> str:
        return f"{self.consumer} → {self.service_instance_id} ({self.priority})"


class InterfacePolicy(models.TextChoices):
    NONE = "NONE"
    CERT_AUTH = "CERT_AUTH"
    TIME_LIMITED_TOKEN_AUTH = "TIME_LIMITED_TOKEN_AUTH"
    USAGE_LIMITED_TOKEN_AUTH = "USAGE_LIMITED_TOKEN_AUTH"
    BASE64_SELF_CONTAINED_TOKEN_AUTH = "BASE64_SELF_CONTAINED_TOKEN_AUTH"
    RSA_SHA256_JSON_WEB_TOKEN_AUTH = "RSA_SHA256_JSON_WEB_TOKEN_AUTH"
    RSA_SHA512_JSON_WEB_TOKEN_AUTH = "RSA_SHA512_JSON_WEB_TOKEN_AUTH"


class ServiceInstance(models.Model):
    """A provider's service instance as the catalog knows it (shaped like the Arrowhead
    ServiceRegistry's). `service_instance_id` is `<provider>|<serviceDefinition>|<version>`."""

    service_instance_id = models.CharField("service instance id", max_length=160, unique=True)
    provider = models.CharField(max_length=63)
    service_definition = models.CharField(max_length=63)
    version = models.CharField(max_length=14)
    expires_at = models.DateTimeField(null=True, blank=True,
                                      help_text="Empty: never expires.")
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(editable=False)
    updated_at = models.DateTimeField(editable=False)

    class Meta:
        indexes = [
            models.Index(fields=["provider"], name="instance_provider"),
            models.Index(fields=["service_definition"], name="instance_service_definition"),
            models.Index(fields=["expires_at"], name="instance_expires_at"),
        ]

    def __str__(self) -> str:
        return self.service_instance_id


class ServiceInterface(models.Model):
    """One way to reach an instance: a template (`generic_http`, …), its protocol, security
    policy and properties (addresses, port, paths, operations)."""

    instance = models.ForeignKey(ServiceInstance, on_delete=models.CASCADE,
                                 related_name="interfaces")
    position = models.PositiveSmallIntegerField(default=0)
    template_name = models.CharField(max_length=63)
    protocol = models.CharField(max_length=63)
    policy = models.CharField(max_length=40, choices=InterfacePolicy.choices)
    properties = models.JSONField(default=dict)
    # Quality of service: the latest TCP connect time to this interface (QOS_ENABLED).
    latency_ms = models.FloatField(null=True, blank=True, editable=False)
    latency_measured_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["instance", "position"]
        constraints = [
            models.UniqueConstraint(fields=["instance", "position"],
                                    name="interface_unique_position"),
        ]

    def __str__(self) -> str:
        return f"{self.template_name} ({self.policy})"


class FlexibleRule(models.Model):
    """A flexible store rule (issue 33, docs/flexible-store.md): the consumers it applies to
    (by name and/or system metadata), the providers it selects (by name and/or system
    metadata), the service definition, and optionally the interface template, service-instance
    metadata and version range the selected instances must have; `priority` orders the results
    (lower is better). The metadata requirements are lists of requirement objects, any of which
    may match, in the operator language of pull's `metadataRequirements`."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    consumer = models.CharField(max_length=63, null=True, blank=True)
    consumer_metadata = models.JSONField(null=True, blank=True)
    provider = models.CharField(max_length=63, null=True, blank=True)
    provider_metadata = models.JSONField(null=True, blank=True)
    service_definition = models.CharField(max_length=63)
    interface_template = models.CharField(max_length=63, null=True, blank=True)
    service_metadata = models.JSONField(null=True, blank=True)
    min_version = models.CharField(max_length=14, null=True, blank=True)
    max_version = models.CharField(max_length=14, null=True, blank=True)
    priority = models.IntegerField()
    # SHA-256 of the rule's fields (store.services.flexible_rules): the same rule twice is
    # refused, and this unique index is the net under concurrent creates.
    fingerprint = models.CharField(max_length=64, unique=True, editable=False)
    created_by = models.CharField(max_length=63, editable=False)
    created_at = models.DateTimeField(editable=False)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(priority__gte=1) & Q(priority__lte=MAX_PRIORITY),
                name="flexible_rule_priority_positive",
            ),
            models.CheckConstraint(
                condition=Q(consumer__isnull=False) | Q(consumer_metadata__isnull=False),
                name="flexible_rule_has_consumer",
            ),
            models.CheckConstraint(
                condition=Q(provider__isnull=False) | Q(provider_metadata__isnull=False),
                name="flexible_rule_has_provider",
            ),
        ]
        indexes = [
            # pull: the rules naming the consumer, and those selecting consumers by metadata
            models.Index(fields=["consumer", "service_definition"],
                         name="flexible_rule_consumer"),
            models.Index(fields=["service_definition"], name="flexible_rule_definition"),
            models.Index(fields=["created_at", "id"], name="flexible_rule_created_at"),
        ]

    def __str__(self) -> str:
        consumer = self.consumer or "consumers by metadata"
        provider = self.provider or "providers by metadata"
        return f"{consumer} → {self.service_definition} of {provider} ({self.priority})"
