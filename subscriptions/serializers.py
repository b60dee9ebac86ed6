from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from api.fields import (
    PYTHON_BLANKS,
    BoundedDictField,
    StrictCharField,
    documented,
    optional_positive_integer,
)
from api.name_fields import SystemNameField, any_case_pattern
from api.schema import BLANK_REFUSED, required_not_null
from api.shapes import compile_check
from orchestration.history.job_serializers import OrchestrationJobSerializer
from orchestration.pull.serializers import MAX_SECONDS, OrchestrationRequestSerializer
from subscriptions.models import Subscription
from subscriptions.requests import PROTOCOLS

ProtocolField = documented(StrictCharField, {
    "type": "string", "pattern": any_case_pattern(PROTOCOLS, blank=f"[{PYTHON_BLANKS}]"),
    BLANK_REFUSED: True})


@extend_schema_serializer(extensions=required_not_null("protocol", "properties"))
class NotifyInterfaceSerializer(serializers.Serializer):
    protocol = ProtocolField(required=False, allow_null=True,
                               help_text="HTTP, HTTPS, MQTT or MQTTS (any case).")
    properties = BoundedDictField(
        required=False, allow_null=True,
        help_text="MQTT: topic. HTTP: address, port, method (POST/PUT/PATCH), path.")


@extend_schema_serializer(extensions=required_not_null("notifyInterface"))
class SubscribeSerializer(serializers.Serializer):
    orchestrationRequest = OrchestrationRequestSerializer(required=False, allow_null=True)
    notifyInterface = NotifyInterfaceSerializer(required=False, allow_null=True)
    duration = optional_positive_integer(maximum=MAX_SECONDS,
                                         help_text="Seconds; absent: until unsubscribed.")
    targetSystemName = StrictCharField(required=False, allow_null=True,
                                       help_text="When given, must be the requester.")


# The subscribe body's type check, compiled from the serializer (api.shapes).
checked_subscribe_request = compile_check(SubscribeSerializer)


class NotifyInterfaceResponseSerializer(serializers.Serializer):
    protocol = serializers.ChoiceField(choices=Subscription.Protocol.values,
                                       source="notify_protocol")
    properties = serializers.DictField(source="notify_properties",
                                       help_text="Keys in lower case.")


@extend_schema_field(OrchestrationRequestSerializer)
class StoredRequestField(serializers.JSONField):
    """The orchestration request as it was subscribed (its members as sent)."""


class OrchestrationSubscriptionResponseSerializer(serializers.Serializer):
    """A subscription as push management and the consumer's query show it (the reference's
    `OrchestrationSubscriptionResponseDTO`)."""

    id = serializers.UUIDField()
    ownerSystemName = SystemNameField(source="owner")
    targetSystemName = SystemNameField(source="target")
    orchestrationRequest = StoredRequestField(source="orchestration_request")
    notifyInterface = NotifyInterfaceResponseSerializer(source="*")
    expiredAt = serializers.DateTimeField(source="expires_at", required=False,
                                          help_text="Absent: until unsubscribed.")
    createdAt = serializers.DateTimeField(source="created_at")

    def to_representation(self, instance: Subscription) -> dict:
        data = super().to_representation(instance)
        if data.get("expiredAt") is None:
            data.pop("expiredAt", None)
        return data


class OrchestrationSubscriptionListResponseSerializer(serializers.Serializer):
    entries = OrchestrationSubscriptionResponseSerializer(many=True)
    count = serializers.IntegerField()


class PushJobListSerializer(serializers.Serializer):
    jobs = OrchestrationJobSerializer(many=True)
