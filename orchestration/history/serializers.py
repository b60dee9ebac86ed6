"""Wire shapes of the history query (reference `OrchestrationHistoryQueryRequestDTO` and
`OrchestrationHistoryResponseDTO`); entries use the shared job shape."""
from rest_framework import serializers

from api.fields import (
    StrictCharField,
    documented,
    optional_string_list,
    pagination_field,
)
from api.name_fields import any_case_pattern
from api.schema import BLANK_REFUSED
from orchestration.history.job_serializers import OrchestrationJobSerializer
from orchestration.history.selectors import SORTING
from orchestration.models import OrchestrationJob

JobTypeField = documented(StrictCharField, {
    "type": "string", "nullable": True, "pattern": any_case_pattern(OrchestrationJob.Type.values),
    BLANK_REFUSED: True})


class JobQuerySerializer(serializers.Serializer):
    pagination = pagination_field(**SORTING)
    ids = optional_string_list(limit_setting="MAX_BULK_SIZE",
                               help_text="Job ids (UUIDs).")
    statuses = optional_string_list(
        pattern=any_case_pattern(OrchestrationJob.Status.values),
        help_text="PENDING, IN_PROGRESS, DONE or ERROR, in any case, surrounding blanks "
        "ignored; any other value is a 400 `Invalid status: <value>`.")
    type = JobTypeField(
        required=False, allow_null=True,
        help_text="PULL or PUSH, in any case, surrounding blanks ignored; any other value "
        "(also a blank one) is a 400 `Invalid type: <value>`. Null: any type.")
    requesterSystems = optional_string_list()
    targetSystems = optional_string_list()
    serviceDefinitions = optional_string_list()
    subscriptionIds = optional_string_list(limit_setting="MAX_BULK_SIZE",
                                           help_text="Subscription ids (UUIDs); jobs of no "
                                           "subscription (pulls) never match.")


class JobListSerializer(serializers.Serializer):
    entries = OrchestrationJobSerializer(many=True)
    count = serializers.IntegerField(help_text="Total number of matching jobs, all pages.")
