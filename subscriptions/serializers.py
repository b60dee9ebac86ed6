from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from config.fields import (
    BoundedDictField,
    StrictCharField,
    bulk_list,
    optional_positive_integer,
    optional_string_list,
    pagination_field,
)
from config.name_fields import SystemNameField
from config.schema import required_not_null
from orchestration.job_serializers import OrchestrationJobSerializer
from orchestration.serializers import MAX_SECONDS, OrchestrationRequestSerializer
from subscriptions.models import Subscription
from subscriptions.selectors import DEFAULT_DIRECTION, DEFAULT_SORT_FIELD, SORT_COLUMNS


@extend_schema_serializer(extensions=required_not_null("protocol", "properties"))
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


@extend_schema_serializer(extensions=required_not_null("notifyInterface", "targetSystemName"))
class PushSubscriptionSerializer(SubscribeSerializer):
    """A subscription on behalf of a consumer: the same fields, `targetSystemName` required
    (any system)."""


@extend_schema_serializer(extensions=required_not_null("subscriptions"))
class PushSubscribeSerializer(serializers.Serializer):
    subscriptions = bulk_list(PushSubscriptionSerializer(allow_null=True),
                              help_text="Each with `targetSystemName` (any system).")


class SubscriptionQuerySerializer(serializers.Serializer):
    pagination = pagination_field(sort_fields=list(SORT_COLUMNS),
                                  default_sort_field=DEFAULT_SORT_FIELD,
                                  default_direction=DEFAULT_DIRECTION)
    ownerSystems = optional_string_list()
    targetSystems = optional_string_list()
    serviceDefinitions = optional_string_list()


class PushTriggerSerializer(serializers.Serializer):
    targetSystems = optional_string_list(help_text="Push every subscription for these "
                                         "consumers (used when subscriptionIds is empty).")
    subscriptionIds = optional_string_list(limit_setting="MAX_BULK_SIZE",
                                           help_text="Push these subscriptions.")


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
