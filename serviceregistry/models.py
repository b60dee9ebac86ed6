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
