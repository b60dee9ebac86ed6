"""Wire shapes of the rule store (SPEC §3): the names here are the interface's names."""
from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from api.fields import (
    StrictCharField,
    StrictIntegerField,
    bulk_list,
    documented,
)
from api.name_fields import InstanceIdField, ServiceDefinitionField, SystemNameField
from api.schema import required_not_null
from store.models import MAX_PRIORITY
from store.services.rules import RuleDraft


class RuleSerializer(serializers.Serializer):
    """Store entry (response record)."""

    id = serializers.UUIDField()
    consumer = SystemNameField()
    serviceDefinition = ServiceDefinitionField(source="service_definition")
    serviceInstanceId = InstanceIdField(source="service_instance_id")
    priority = serializers.IntegerField(min_value=1)
    createdBy = SystemNameField(source="created_by")
    updatedBy = SystemNameField(source="updated_by")
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")


class RuleListSerializer(serializers.Serializer):
    entries = RuleSerializer(many=True)
    count = serializers.IntegerField()


@extend_schema_serializer(extensions=required_not_null("consumer", "serviceInstanceId", "priority"))
class RuleDraftSerializer(serializers.Serializer):
    consumer = StrictCharField(required=False, allow_null=True)
    serviceInstanceId = StrictCharField(required=False, allow_null=True)
    priority = documented(StrictIntegerField, {"type": "integer", "minimum": 1,
                                               "maximum": MAX_PRIORITY})(
        required=False, allow_null=True)


class RuleCreateSerializer(serializers.Serializer):
    entries = bulk_list(RuleDraftSerializer(allow_null=True))
    candidates = bulk_list(RuleDraftSerializer(allow_null=True),
                           help_text="Alias of `entries` (the Java reference's name).")

    def validate(self, data: dict) -> dict:
        if data.get("entries") is not None and data.get("candidates") is not None:
            raise serializers.ValidationError("Give either entries or candidates, not both")
        return data


def rule_drafts_from(validated: dict) -> list[RuleDraft | None]:
    """The drafts of a validated create body (`entries`, or its alias `candidates`)."""
    items = validated.get("entries")
    if items is None:
        items = validated.get("candidates")
    return [None if item is None else RuleDraft(item.get("consumer"),
                                                item.get("serviceInstanceId"),
                                                item.get("priority"))
            for item in items or []]

