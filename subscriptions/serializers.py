from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from config.fields import BoundedDictField, StrictCharField, optional_positive_integer
from config.schema import required_not_null
from orchestration.serializers import MAX_SECONDS, OrchestrationRequestSerializer


@extend_schema_serializer(extensions=required_not_null("protocol"))
class NotifyInterfaceSerializer(serializers.Serializer):
    protocol = StrictCharField(required=False, allow_null=True,
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
