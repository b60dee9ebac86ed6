from rest_framework import serializers

from config.fields import BoundedDictField, StrictCharField, StrictIntegerField
from orchestration.serializers import MAX_SECONDS, OrchestrationRequestSerializer


class NotifyInterfaceSerializer(serializers.Serializer):
    protocol = StrictCharField(required=False, allow_null=True,
                               help_text="HTTP, HTTPS, MQTT or MQTTS (any case).")
    properties = BoundedDictField(
        required=False, allow_null=True,
        help_text="MQTT: topic. HTTP: address, port, method (POST/PUT/PATCH), path.")


class SubscribeSerializer(serializers.Serializer):
    orchestrationRequest = OrchestrationRequestSerializer(required=False, allow_null=True)
    notifyInterface = NotifyInterfaceSerializer(required=False, allow_null=True)
    duration = StrictIntegerField(required=False, allow_null=True, max_value=MAX_SECONDS,
                                  help_text="Seconds; absent: until unsubscribed.")
    targetSystemName = StrictCharField(required=False, allow_null=True,
                                       help_text="When given, must be the requester.")
