"""Wire shapes of the service instance catalog (SPEC §4, shaped like the Arrowhead
ServiceRegistry's instances)."""
from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from api.fields import (
    PYTHON_BLANKS,
    BoundedJSONField,
    BoundedListField,
    StrictCharField,
    bulk_list,
    documented,
    not_blank_text,
)
from api.name_fields import (
    InstanceIdField,
    InterfaceTemplateField,
    ServiceDefinitionField,
    SystemNameField,
    VersionField,
    any_case_pattern,
)
from api.schema import BLANK_REFUSED, required_not_null
from store.interfaces import MAX_PROTOCOL_LENGTH, POLICIES, InterfaceDraft
from store.services.instances import InstanceDraft, InstanceUpdateDraft


class InterfaceSerializer(serializers.Serializer):
    templateName = InterfaceTemplateField(source="template_name")
    protocol = serializers.CharField()
    policy = serializers.ChoiceField(choices=sorted(POLICIES))
    properties = serializers.JSONField()


class ServiceInstanceSerializer(serializers.Serializer):
    instanceId = InstanceIdField(source="service_instance_id")
    provider = SystemNameField()
    serviceDefinition = ServiceDefinitionField(source="service_definition")
    version = VersionField()
    expiresAt = serializers.DateTimeField(source="expires_at", allow_null=True)
    metadata = serializers.JSONField()
    interfaces = InterfaceSerializer(many=True, source="interfaces.all")
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")


class ServiceInstanceListSerializer(serializers.Serializer):
    entries = ServiceInstanceSerializer(many=True)
    count = serializers.IntegerField()


# An instance's metadata is a JSON object (store.interfaces.metadata_validate).
MetadataField = documented(BoundedJSONField, {"type": "object", "additionalProperties": {}})
# At most MAX_PROTOCOL_LENGTH characters once trimmed (store.interfaces), blank: the template's.
_NOT_BLANK = f"[^\\x00{PYTHON_BLANKS}]"
InterfaceProtocolField = documented(StrictCharField, {
    "type": "string", "nullable": True, BLANK_REFUSED: True,
    "pattern": f"^[{PYTHON_BLANKS}]*(?:{_NOT_BLANK}(?:[^\\x00]{{0,{MAX_PROTOCOL_LENGTH - 2}}}"
               f"{_NOT_BLANK})?)?[{PYTHON_BLANKS}]*$",
    "description": "Blank or null: the template's protocol."})
# Trimmed and upper-cased by store.interfaces._policy.
PolicyField = documented(StrictCharField, {
    "type": "string", "pattern": any_case_pattern(sorted(POLICIES), blank=f"[{PYTHON_BLANKS}]"),
    BLANK_REFUSED: True})


@extend_schema_serializer(extensions=required_not_null("templateName", "policy", "properties"))
class InterfaceInputSerializer(serializers.Serializer):
    """Types only; values are checked by store.interfaces (`protocol` defaults from the
    template)."""

    templateName = not_blank_text()
    protocol = InterfaceProtocolField(required=False, allow_null=True)
    policy = PolicyField(required=False, allow_null=True)
    properties = BoundedJSONField(required=False, allow_null=True)


def _interface_list() -> BoundedListField:
    return BoundedListField(child=InterfaceInputSerializer(allow_null=True), required=False,
                            allow_null=True)


@extend_schema_serializer(extensions=required_not_null("systemName", "serviceDefinitionName",
                                                      "interfaces"))
class InstanceInputSerializer(serializers.Serializer):
    systemName = StrictCharField(required=False, allow_null=True)
    serviceDefinitionName = StrictCharField(required=False, allow_null=True)
    version = StrictCharField(required=False, allow_null=True)
    expiresAt = StrictCharField(required=False, allow_null=True)
    metadata = MetadataField(required=False, allow_null=True)
    interfaces = _interface_list()


@extend_schema_serializer(extensions=required_not_null("instances"))
class InstanceCreateSerializer(serializers.Serializer):
    instances = bulk_list(InstanceInputSerializer(allow_null=True))


@extend_schema_serializer(extensions=required_not_null("instanceId", "interfaces"))
class InstanceUpdateInputSerializer(serializers.Serializer):
    instanceId = not_blank_text()
    expiresAt = StrictCharField(required=False, allow_null=True)
    metadata = MetadataField(required=False, allow_null=True)
    interfaces = _interface_list()


@extend_schema_serializer(extensions=required_not_null("instances"))
class InstanceUpdateSerializer(serializers.Serializer):
    instances = bulk_list(InstanceUpdateInputSerializer(allow_null=True))


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
