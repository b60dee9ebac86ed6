"""Wire shapes of the flexible store (issue 33, docs/flexible-store.md)."""
from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from api.fields import (
    RequirementListField,
    StrictCharField,
    StrictIntegerField,
    bulk_list,
    documented,
)
from api.name_fields import ServiceDefinitionField, SystemNameField
from api.schema import required_not_null
from store.models import MAX_PRIORITY
from store.services.flexible_rules import FlexibleRuleDraft


def _requirements(help_text: str) -> RequirementListField:
    return RequirementListField(required=False, allow_null=True, help_text=help_text)


class FlexibleRuleSerializer(serializers.Serializer):
    """Store entry (response record); absent parts are null."""

    id = serializers.UUIDField()
    consumer = SystemNameField(allow_null=True)
    consumerMetadataRequirements = serializers.JSONField(source="consumer_metadata")
    provider = SystemNameField(allow_null=True)
    providerMetadataRequirements = serializers.JSONField(source="provider_metadata")
    serviceDefinition = ServiceDefinitionField(source="service_definition")
    interfaceTemplateName = serializers.CharField(source="interface_template", allow_null=True)
    serviceMetadataRequirements = serializers.JSONField(source="service_metadata")
    minVersion = serializers.CharField(source="min_version", allow_null=True)
    maxVersion = serializers.CharField(source="max_version", allow_null=True)
    priority = serializers.IntegerField(min_value=1)
    createdBy = SystemNameField(source="created_by")
    createdAt = serializers.DateTimeField(source="created_at")


class FlexibleRuleListSerializer(serializers.Serializer):
    entries = FlexibleRuleSerializer(many=True)
    count = serializers.IntegerField()


@extend_schema_serializer(extensions=required_not_null("serviceDefinition"))
class FlexibleRuleDraftSerializer(serializers.Serializer):
    consumer = StrictCharField(required=False, allow_null=True,
                               help_text="The consumer's system name; this and/or "
                               "consumerMetadataRequirements.")
    consumerMetadataRequirements = _requirements(
        "Consumers whose system metadata (in the ServiceRegistry) satisfies any of these "
        "requirement objects.")
    provider = StrictCharField(required=False, allow_null=True,
                               help_text="The provider's system name; this and/or "
                               "providerMetadataRequirements.")
    providerMetadataRequirements = _requirements(
        "Providers whose system metadata satisfies any of these requirement objects.")
    serviceDefinition = StrictCharField(required=False, allow_null=True)
    interfaceTemplateName = StrictCharField(required=False, allow_null=True,
                                            help_text="Only interfaces of this template.")
    serviceMetadataRequirements = _requirements(
        "Instances whose metadata satisfies any of these requirement objects.")
    minVersion = StrictCharField(required=False, allow_null=True,
                                 help_text="Lowest instance version, inclusive.")
    maxVersion = StrictCharField(required=False, allow_null=True,
                                 help_text="Highest instance version, inclusive.")
    priority = documented(StrictIntegerField, {"type": "integer", "minimum": 1,
                                               "maximum": MAX_PRIORITY})(
        required=False, allow_null=True, help_text=f"Lower is better; absent: {MAX_PRIORITY}.")


class FlexibleRuleCreateSerializer(serializers.Serializer):
    entries = bulk_list(FlexibleRuleDraftSerializer(allow_null=True))


def flexible_rule_drafts_from(validated: dict) -> list[FlexibleRuleDraft | None]:
    """The drafts of a validated create body."""
    return [None if item is None else FlexibleRuleDraft(
        consumer=item.get("consumer"),
        consumer_metadata=item.get("consumerMetadataRequirements"),
        provider=item.get("provider"),
        provider_metadata=item.get("providerMetadataRequirements"),
        service_definition=item.get("serviceDefinition"),
        interface_template=item.get("interfaceTemplateName"),
        service_metadata=item.get("serviceMetadataRequirements"),
        min_version=item.get("minVersion"),
        max_version=item.get("maxVersion"),
        priority=item.get("priority"),
    ) for item in validated.get("entries") or []]
