from django.db import models


class PolledInstance(models.Model):
    """What the last poll of the ServiceRegistry saw of an instance behind a live subscription
    (serviceregistry.polling): a change of the fingerprint is a catalog change."""

    instance_id = models.CharField("service instance id", max_length=160, unique=True)
    # SHA-256 (hex) of expiresAt, metadata and interfaces; empty: not in the ServiceRegistry.
    fingerprint = models.CharField(max_length=64, blank=True)
    polled_at = models.DateTimeField()

    def __str__(self) -> str:
        return self.instance_id


class PolledSystem(models.Model):
    """What the last poll saw of the system metadata of a live subscription's consumer, under
    the flexible store when rules select consumers by metadata (serviceregistry.polling)."""

    name = models.CharField(max_length=63, unique=True)
    # SHA-256 (hex) of the system metadata; empty: not in the ServiceRegistry.
    fingerprint = models.CharField(max_length=64, blank=True)
    polled_at = models.DateTimeField()

    def __str__(self) -> str:
        return self.name
