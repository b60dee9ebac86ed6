"""Wire shapes of the orchestration interface (SPEC §5). The two misspelled result fields
`serviceDefinitition` and `cloudIdentitifer` are part of the Arrowhead wire format (SPEC §1):
they live here, once."""
from django.conf import settings
from rest_framework import serializers

from api.fields import (
    PYTHON_BLANKS,
    BoundedDictField,
    RequirementListField,
    StrictCharField,
    documented,
    optional_positive_integer,
    optional_string_list,
)
from api.name_fields import (
    InstanceIdField,
    ServiceDefinitionField,
    SystemNameField,
    VersionField,
    any_case_pattern,
)
from api.schema import runtime_schema
from api.shapes import NoneLeftOut, compile_check, compile_renderer
from orchestration.pull.normalization import FLAG_VALUES
from orchestration.pull.services import MAX_LATENCY_DIGITS, QOS_MAX_LATENCY
from store.addresses import ADDRESS_TYPES
from store.interfaces import POLICIES

MAX_SECONDS = 2_147_483_647  # durations are stored as database integers


def _requirement_list(help_text: str) -> RequirementListField:
    return RequirementListField(required=False, allow_null=True, help_text=help_text)


class ServiceRequirementSerializer(serializers.Serializer):
    serviceDefinition = StrictCharField(required=False, allow_null=True)
    # Each operation costs a token per token-protected result interface: a smaller limit.
    operations = optional_string_list(limit_setting="MAX_PULL_OPERATIONS")
    versions = optional_string_list()
    alivesAt = StrictCharField(required=False, allow_null=True,
                               help_text="ISO 8601 UTC, e.g. 2025-11-08T12:00:00Z")
    metadataRequirements = _requirement_list("OR of requirement objects (AND inside one).")
    interfaceTemplateNames = optional_string_list()
    interfaceAddressTypes = optional_string_list(
        pattern=any_case_pattern(ADDRESS_TYPES, blank=f"[{PYTHON_BLANKS}]"),
        help_text="HOSTNAME, IPV4, IPV6, MAC")
    interfacePropertyRequirements = _requirement_list("OR of requirement objects on interface "
                                                      "properties.")
    securityPolicies = optional_string_list(
        pattern=any_case_pattern(sorted(POLICIES), blank=f"[{PYTHON_BLANKS}]"))
    preferredProviders = optional_string_list()


def _positive_digits(most: int) -> str:
    """At most `most` ASCII digits, not all zeros."""
    return "|".join(f"0{{{zeros}}}[1-9][0-9]{{0,{most - zeros - 1}}}" for zeros in range(most))


def qos_requirements_schema() -> dict:
    """`qosRequirements` as `services.qos_max_latency` accepts it under the current
    QOS_ENABLED: when off, only the empty object (any requirement is a 400 "QoS support is
    disabled"); when on, only `maxLatencyMs`, a positive integer of at most
    MAX_LATENCY_DIGITS digits, as a number or as text with blanks around."""
    if not settings.QOS_ENABLED:
        return {"type": "object", "maxProperties": 0,
                "description": "QoS is disabled (QOS_ENABLED): only an empty object or null."}
    latency = {"oneOf": [
        {"type": "integer", "minimum": 1, "maximum": 10 ** MAX_LATENCY_DIGITS - 1},
        {"type": "string",
         "pattern": f"^[{PYTHON_BLANKS}]*(?:{_positive_digits(MAX_LATENCY_DIGITS)})"
                    f"[{PYTHON_BLANKS}]*$"}]}
    return {"type": "object", "properties": {QOS_MAX_LATENCY: latency},
            "additionalProperties": False}


QosRequirementsField = documented(BoundedDictField,
                                  runtime_schema("qosRequirements", qos_requirements_schema))


# Flag names are read in any case, which OpenAPI 3.0 cannot say of property names (no
# `propertyNames`): only the values are described (orchestration.pull.normalization.parse_flags).
FlagsField = documented(BoundedDictField, {
    "type": "object", "additionalProperties": {"oneOf": [
        {"type": "boolean"},
        {"type": "string", "pattern": any_case_pattern(FLAG_VALUES, blank=f"[{PYTHON_BLANKS}]")},
    ]}})


class OrchestrationRequestSerializer(serializers.Serializer):
    serviceRequirement = ServiceRequirementSerializer(required=False, allow_null=True)
    orchestrationFlags = FlagsField(
        required=False, allow_null=True,
        help_text="Flag name → true/false (JSON booleans or strings). MATCHMAKING, "
        "ONLY_PREFERRED, ONLY_EXCLUSIVE, ALLOW_TRANSLATION, ALLOW_INTERCLOUD, ONLY_INTERCLOUD. "
        "ALLOW_TRANSLATION, ALLOW_INTERCLOUD, ONLY_INTERCLOUD and ONLY_EXCLUSIVE without "
        "exclusivityDuration are ignored, as the Java simple store ignores them: warning "
        "`ignoredFlags: [...]`.")
    qosRequirements = QosRequirementsField(
        required=False, allow_null=True,
        help_text='{"maxLatencyMs": <positive integer>}, only with QOS_ENABLED: the schema '
        'shows what the running configuration accepts (with QoS disabled, only no requirement).')
    exclusivityDuration = optional_positive_integer(maximum=MAX_SECONDS, help_text="Seconds.")


# The pull body's type check, compiled from the serializer (api.shapes).
checked_orchestration_request = compile_check(OrchestrationRequestSerializer)


class TokenSerializer(serializers.Serializer):
    tokenType = serializers.CharField()
    targetType = serializers.CharField()
    token = serializers.CharField()
    # ConsumerAuthorization's usage-limited tokens never expire (AUTHORIZATION_TOKENS).
    expiresAt = serializers.DateTimeField(required=False)
    usageLimit = serializers.IntegerField(required=False)


class InterfaceResultSerializer(serializers.Serializer):
    templateName = serializers.CharField()
    protocol = serializers.CharField()
    policy = serializers.CharField()
    properties = serializers.JSONField()


class OrchestrationResultEntrySerializer(NoneLeftOut, serializers.Serializer):
    # Absent values are left out (SPEC §5): NoneLeftOut.
    serviceInstanceId = InstanceIdField(source="service_instance_id")
    cloudIdentitifer = serializers.SerializerMethodField()  # sic, SPEC §1
    providerName = SystemNameField(source="provider")
    serviceDefinitition = ServiceDefinitionField(source="service_definition")  # sic, SPEC §1
    version = VersionField()
    aliveUntil = serializers.DateTimeField(source="alive_until", required=False)
    exclusiveUntil = serializers.DateTimeField(source="exclusive_until", required=False)
    metadata = serializers.JSONField(required=False)
    interfaces = InterfaceResultSerializer(many=True, required=False)
    authorizationTokens = serializers.DictField(
        source="authorization_tokens", child=serializers.DictField(child=TokenSerializer()),
        required=False)

    def get_cloudIdentitifer(self, entry) -> str:  # noqa: N802 (wire name)
        return "LOCAL"


# The pull/push answer: the OpenAPI schema reads it, and the renderer of the answer is compiled
# from it (`orchestration_response_data` below). A comment, not a docstring: drf-spectacular would
# publish a docstring as the schema's description.
class OrchestrationResponseSerializer(serializers.Serializer):
    results = OrchestrationResultEntrySerializer(many=True)
    warnings = serializers.ListField(
        child=serializers.CharField(),
        help_text="The Java simple store's `ignoredFields: [...]` (conditions not evaluated for "
        "instances unknown to the catalog) and `ignoredFlags: [...]`, then auto_matchmaking, "
        "not_exclusive, part_time_exclusivity, translation_not_supported, "
        "intercloud_not_supported.")


# The wire form of a pull/push result: exactly OrchestrationResponseSerializer's data.
orchestration_response_data = compile_renderer(OrchestrationResponseSerializer)
