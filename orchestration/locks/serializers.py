"""Wire shapes of lock management: the Java DTOs OrchestrationLockListRequestDTO,
OrchestrationLockQueryRequestDTO and OrchestrationLockListResponseDTO."""
from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from api.fields import (
    StrictCharField,
    StrictIntegerField,
    bulk_list,
    optional_string_list,
    pagination_field,
)
from api.name_fields import SystemNameField
from api.schema import required_not_null
from orchestration.locks.selectors import SORTING
from orchestration.locks.services import LockDraft


class LockSerializer(serializers.Serializer):
    """A lock (response record). Locks carry no orchestration job and none is temporary: a
    reservation is made in one step by the pull that makes it."""

    id = serializers.IntegerField()
    orchestrationJobId = serializers.SerializerMethodField()
    serviceInstanceId = serializers.CharField(source="service_instance_id")
    owner = SystemNameField()
    expiresAt = serializers.DateTimeField(source="expires_at")
    temporary = serializers.SerializerMethodField()

    def get_orchestrationJobId(self, lock) -> str | None:  # noqa: N802 (wire name)
        return None

    def get_temporary(self, lock) -> bool:
        return False


class LockListSerializer(serializers.Serializer):
    entries = LockSerializer(many=True)
    count = serializers.IntegerField()


@extend_schema_serializer(extensions=required_not_null("serviceInstanceId", "owner",
                                                       "expiresAt"))
class LockDraftSerializer(serializers.Serializer):
    serviceInstanceId = StrictCharField(required=False, allow_null=True)
    owner = StrictCharField(required=False, allow_null=True)
    expiresAt = StrictCharField(required=False, allow_null=True,
                                help_text="ISO 8601 UTC, in the future, e.g. "
                                "2030-01-01T00:00:00Z")


@extend_schema_serializer(extensions=required_not_null("locks"))
class LockCreateSerializer(serializers.Serializer):
    locks = bulk_list(LockDraftSerializer(allow_null=True))


class LockQuerySerializer(serializers.Serializer):
    pagination = pagination_field(**SORTING)
    ids = serializers.ListField(child=StrictIntegerField(min_value=1, max_value=2**63 - 1),
                                required=False, allow_null=True, max_length=1000)
    orchestrationJobIds = optional_string_list(source="orchestration_job_ids")
    serviceInstanceIds = optional_string_list(source="service_instance_ids")
    owners = optional_string_list()
    expiresBefore = StrictCharField(required=False, allow_null=True, source="expires_before")
    expiresAfter = StrictCharField(required=False, allow_null=True, source="expires_after")


def lock_drafts_from(validated: dict) -> list[LockDraft | None]:
    return [None if item is None else LockDraft(item.get("serviceInstanceId"),
                                                item.get("owner"), item.get("expiresAt"))
            for item in validated.get("locks") or []]
