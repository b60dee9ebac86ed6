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
