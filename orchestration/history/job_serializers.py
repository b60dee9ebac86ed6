"""The wire shape of an orchestration job (reference `OrchestrationJobDTO`), shared by the
history query and push management's trigger."""
from rest_framework import serializers

from api.name_fields import ServiceDefinitionField, SystemNameField
from orchestration.models import OrchestrationJob


class OrchestrationJobSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=OrchestrationJob.Status.values)
    type = serializers.ChoiceField(choices=OrchestrationJob.Type.values)
    requesterSystem = SystemNameField(source="requester")
    targetSystem = SystemNameField(source="target")
    serviceDefinition = ServiceDefinitionField(source="service_definition", allow_null=True)
    subscriptionId = serializers.UUIDField(source="subscription_id", allow_null=True)
    message = serializers.CharField(allow_blank=True)
    createdAt = serializers.DateTimeField(source="created_at")
    startedAt = serializers.DateTimeField(source="started_at", allow_null=True)
    finishedAt = serializers.DateTimeField(source="finished_at", allow_null=True)
