"""Wire shapes of the service instance catalog (SPEC §4, shaped like the Arrowhead
ServiceRegistry's instances)."""
from rest_framework import serializers

from config.fields import (
    BoundedJSONField,
    BoundedListField,
    PaginationField,
    RequirementListField,
    StrictCharField,
    optional_string_list,
)
from store.interfaces import InterfaceDraft
from store.services.instances import InstanceDraft, InstanceUpdateDraft


class InterfaceSerializer(serializers.Serializer):
    templateName = serializers.CharField(source="template_name")
    protocol = serializers.CharField()
    policy = serializers.CharField()
    properties = serializers.JSONField()


class ServiceInstanceSerializer(serializers.Serializer):
    instanceId = serializers.CharField(source="service_instance_id")
    provider = serializers.CharField()
    serviceDefinition = serializers.CharField(source="service_definition")
    version = serializers.CharField()
    expiresAt = serializers.DateTimeField(source="expires_at", allow_null=True)
    metadata = serializers.JSONField()
    interfaces = InterfaceSerializer(many=True, source="interfaces.all")
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")


class ServiceInstanceListSerializer(serializers.Serializer):
    entries = ServiceInstanceSerializer(many=True)
    count = serializers.IntegerField()


class InterfaceInputSerializer(serializers.Serializer):
    """Types only; values are checked by store.interfaces."""

    templateName = StrictCharField(required=False, allow_null=True)
    protocol = StrictCharField(required=False, allow_null=True)
    policy = StrictCharField(required=False, allow_null=True)
    properties = BoundedJSONField(required=False, allow_null=True)


def _interface_list() -> BoundedListField:
    return BoundedListField(child=InterfaceInputSerializer(allow_null=True), required=False,
                            allow_null=True)


class InstanceInputSerializer(serializers.Serializer):
    systemName = StrictCharField(required=False, allow_null=True)
    serviceDefinitionName = StrictCharField(required=False, allow_null=True)
    version = StrictCharField(required=False, allow_null=True)
    expiresAt = StrictCharField(required=False, allow_null=True)
    metadata = BoundedJSONField(required=False, allow_null=True)
    interfaces = _interface_list()


class InstanceCreateSerializer(serializers.Serializer):
    instances = serializers.ListField(child=InstanceInputSerializer(allow_null=True),
                                      required=False, allow_null=True)


class InstanceUpdateInputSerializer(serializers.Serializer):
    instanceId = StrictCharField(required=False, allow_null=True)
    expiresAt = StrictCharField(required=False, allow_null=True)
    metadata = BoundedJSONField(required=False, allow_null=True)
    interfaces = _interface_list()


class InstanceUpdateSerializer(serializers.Serializer):
    instances = serializers.ListField(child=InstanceUpdateInputSerializer(allow_null=True),
                                      required=False, allow_null=True)


class InstanceQuerySerializer(serializers.Serializer):
    pagination = PaginationField(required=False, allow_null=True)
    instanceIds = optional_string_list(limit_setting="MAX_BULK_SIZE")
    providerNames = optional_string_list()
    serviceDefinitionNames = optional_string_list()
    versions = optional_string_list()
    alivesAt = StrictCharField(required=False, allow_null=True)
    metadataRequirementsList = RequirementListField(
        required=False, allow_null=True,
        help_text="OR of requirement objects; each object is an AND of key-path conditions.")


def _interface_drafts(items: list | None) -> list[InterfaceDraft | None] | None:
    if items is None:
        return None
    return [None if item is None else InterfaceDraft(
        item.get("templateName"), item.get("protocol"), item.get("policy"), item.get("properties"))
        for item in items]


def instance_drafts_from(validated: dict) -> list[InstanceDraft | None]:
    return [None if item is None else InstanceDraft(
        item.get("systemName"), item.get("serviceDefinitionName"), item.get("version"),
        item.get("expiresAt"), item.get("metadata"), _interface_drafts(item.get("interfaces")))
        for item in validated.get("instances") or []]


def instance_update_drafts_from(validated: dict) -> list[InstanceUpdateDraft | None]:
    return [None if item is None else InstanceUpdateDraft(
        item.get("instanceId"), item.get("expiresAt"), item.get("metadata"),
        _interface_drafts(item.get("interfaces")))
        for item in validated.get("instances") or []]


def instance_create_shape(instance) -> dict:
    """An instance in the create request's shape (what export writes and import reads)."""
    data = ServiceInstanceSerializer(instance).data
    return {"systemName": data["provider"], "serviceDefinitionName": data["serviceDefinition"],
            "version": data["version"], "expiresAt": data["expiresAt"],
            "metadata": data["metadata"], "interfaces": data["interfaces"]}
