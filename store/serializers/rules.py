"""Wire shapes of the rule store (SPEC §3): the names here are the interface's names."""
from rest_framework import serializers

from config.fields import (
    PaginationField,
    StrictCharField,
    StrictIntegerField,
    optional_string_list,
)
from store.services.rules import RuleDraft


class RuleSerializer(serializers.Serializer):
    """Store entry (response record)."""

    id = serializers.UUIDField()
    consumer = serializers.CharField()
    serviceDefinition = serializers.CharField(source="service_definition")
    serviceInstanceId = serializers.CharField(source="service_instance_id")
    priority = serializers.IntegerField()
    createdBy = serializers.CharField(source="created_by")
    updatedBy = serializers.CharField(source="updated_by")
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")


class RuleListSerializer(serializers.Serializer):
    entries = RuleSerializer(many=True)
    count = serializers.IntegerField()


class RuleQuerySerializer(serializers.Serializer):
    pagination = PaginationField(required=False, allow_null=True)
    ids = optional_string_list(limit_setting="MAX_BULK_SIZE")
    consumerNames = optional_string_list()
    serviceDefinitions = optional_string_list()
    serviceInstanceIds = optional_string_list(limit_setting="MAX_BULK_SIZE")
    minPriority = StrictIntegerField(required=False, allow_null=True)
    maxPriority = StrictIntegerField(required=False, allow_null=True)
    createdBy = StrictCharField(required=False, allow_null=True)


class RuleDraftSerializer(serializers.Serializer):
    consumer = StrictCharField(required=False, allow_null=True)
    serviceInstanceId = StrictCharField(required=False, allow_null=True)
    priority = StrictIntegerField(required=False, allow_null=True)


class RuleCreateSerializer(serializers.Serializer):
    entries = serializers.ListField(child=RuleDraftSerializer(allow_null=True), required=False,
                                    allow_null=True)
    candidates = serializers.ListField(child=RuleDraftSerializer(allow_null=True),
                                       required=False, allow_null=True,
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


PRIORITY_MAP_SCHEMA = {
    "type": "object",
    "description": "Rule id (UUID) → new priority (positive integer).",
    "additionalProperties": {"type": "integer", "minimum": 1},
    "example": {"0b9c4a4e-4a4e-4b9c-9c4a-4e4a4e4b9c4a": 2},
}
