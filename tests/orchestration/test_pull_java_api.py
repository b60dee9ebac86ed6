"""Pull as the Java simple store answers it (issue 12 item 4; SPEC §5 steps 2 and 10; audit
S12–S15, O5): a rule whose instance is unknown is kept with what its id tells, the Java warnings
`ignoredFields: [...]` and `ignoredFlags: [...]` name what was not evaluated, and the flags the
Java simple store ignores are accepted."""
import datetime as dt

import pytest
from django.utils import timezone

from orchestration.models import OrchestrationLock
from store.models import ServiceInstance, ServiceInterface
from tests.helpers import assert_error
from tests.orchestration.helpers import PULL, instance_ids, pull
from tests.factories import make_instances, make_rules
from tests.pull_sources import reads_no_source
from tests.store.helpers import http_interface, instance_body

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("pull_source")]

ORIGIN = f"POST {PULL}"
GHOST = "Ghost|serviceOne|1.0.0"  # no catalog entry
KNOWN, MQTT_ONLY = "Known|serviceOne|1.0.0", "MqttOnly|serviceOne|2.0.0"
# The request the Java HttpCollectorDriver builds (audit §0.1, S12).
JAVA_COLLECTOR_REQUEST = {
    "serviceRequirement": {"serviceDefinition": "serviceOne",
                           "interfaceTemplateNames": ["generic_http"]},
    "orchestrationFlags": {"MATCHMAKING": True, "ALLOW_INTERCLOUD": False,
                           "ALLOW_TRANSLATION": False},
}
JAVA_FLAGS_WARNING = "ignoredFlags: [ALLOW_INTERCLOUD, ALLOW_TRANSLATION]"


def mqtt_only() -> dict:
    return instance_body("MqttOnly", "serviceOne", "2.0.0", interfaces=[{
        "templateName": "generic_mqtt", "protocol": "tcp", "policy": "NONE",
        "properties": {"accessAddresses": ["localhost"], "accessPort": 1883,
                       "baseTopic": "one/", "operations": ["query"]}}])


@pytest.fixture
def mixed():
    """The consumer's rules: an unknown instance between two known ones."""
    make_instances(instance_body("Known", "serviceOne", "1.0.0", interfaces=[http_interface()]),
                   mqtt_only())
    make_rules(("CarConsumer1", MQTT_ONLY, 1), ("CarConsumer1", GHOST, 2),
               ("CarConsumer1", KNOWN, 3))


def warnings(response) -> list[str]:
    assert response.status_code == 200, response.content
    return response.json()["warnings"]


def requirement(**fields) -> dict:
    return {"serviceRequirement": {"serviceDefinition": "serviceOne", **fields}}


class JavaClientPullTests:
    def test_it_answers_the_java_collector_request_with_an_unknown_instance(self, api):
        make_rules(("CarConsumer1", GHOST, 1))
        response = pull(api, JAVA_COLLECTOR_REQUEST)
        assert response.status_code == 200, response.content
        assert response.json() == {
            "results": [{"serviceInstanceId": GHOST, "cloudIdentitifer": "LOCAL",
                         "providerName": "Ghost", "serviceDefinitition": "serviceOne",
                         "version": "1.0.0"}],
            "warnings": ["ignoredFields: [interfaceTemplateNames]", JAVA_FLAGS_WARNING],
        }

    def test_it_still_filters_known_instances_for_the_java_collector(self, api, mixed):
        # The MQTT-only instance does not qualify; matchmaking keeps the unknown one.
        response = pull(api, JAVA_COLLECTOR_REQUEST)
        assert instance_ids(response) == [GHOST]
        assert warnings(response) == ["ignoredFields: [interfaceTemplateNames]",
                                      JAVA_FLAGS_WARNING]

    def test_it_names_no_ignored_field_when_every_result_is_known(self, api, mixed):
        body = {**JAVA_COLLECTOR_REQUEST, "serviceRequirement": {
            "serviceDefinition": "serviceOne", "interfaceTemplateNames": ["generic_http"],
            "preferredProviders": ["Known"]}}
        response = pull(api, body)
        assert instance_ids(response) == [KNOWN]
        assert warnings(response) == [JAVA_FLAGS_WARNING]


class UnknownInstanceTests:
    def test_it_keeps_unknown_instances_between_filtered_known_ones(self, api, mixed):
        response = pull(api, requirement(interfaceTemplateNames=["generic_http"]))
        assert instance_ids(response) == [GHOST, KNOWN]
        ghost, known = response.json()["results"]
        assert set(ghost) == {"serviceInstanceId", "cloudIdentitifer", "providerName",
                              "serviceDefinitition", "version"}
        assert [i["templateName"] for i in known["interfaces"]] == ["generic_http"]

    def test_it_names_every_field_it_could_not_evaluate_in_the_java_order(self, api, mixed,
                                                                          settings):
        settings.QOS_ENABLED = True
        ServiceInterface.objects.update(latency_ms=1.0, latency_measured_at=timezone.now())
        body = requirement(
            operations=["query"], versions=["1.0.0", "2.0.0"],
            alivesAt=(timezone.now() + dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            metadataRequirements=[{"unit": "celsius"}], interfaceTemplateNames=["generic_http"],
            interfaceAddressTypes=["IPV4"], interfacePropertyRequirements=[{"accessPort": 8080}],
            securityPolicies=["NONE"])
        body["qosRequirements"] = {"maxLatencyMs": "100"}
        response = pull(api, body)
        assert instance_ids(response) == [GHOST, KNOWN]
        assert warnings(response) == [
            "ignoredFields: [operations, alivesAt, metadataRequirements, interfaceTemplateNames, "
            "interfaceAddressTypes, interfacePropertyRequirements, securityPolicies, "
            "qosRequirements]"]

    def test_it_filters_unknown_instances_by_the_version_in_their_id(self, api, mixed):
        response = pull(api, requirement(versions=["2"]))
        assert instance_ids(response) == [MQTT_ONLY]
        assert warnings(response) == []
        assert instance_ids(pull(api, requirement(versions=["1"]))) == [GHOST, KNOWN]
        assert warnings(pull(api, requirement(versions=["1"]))) == []

    def test_it_warns_only_when_an_unknown_instance_is_in_the_result(self, api, mixed):
        body = requirement(operations=["query"])
        body["orchestrationFlags"] = {"MATCHMAKING": True}
        response = pull(api, body)
        assert instance_ids(response) == [MQTT_ONLY]
        assert warnings(response) == []

    def test_it_keeps_no_warning_for_requests_without_requirement_fields(self, api, mixed):
        response = pull(api, requirement())
        assert instance_ids(response) == [MQTT_ONLY, GHOST, KNOWN]
        assert warnings(response) == []

    def test_it_treats_an_unknown_instance_as_not_reservable(self, api):
        make_instances(instance_body("Reservable", "serviceOne", metadata={"allowExclusivity": 60}))
        make_rules(("CarConsumer1", GHOST, 1), ("CarConsumer1", "Reservable|serviceOne|1.0.0", 2))
        response = pull(api, {**requirement(), "exclusivityDuration": 30})
        assert instance_ids(response) == ["Reservable|serviceOne|1.0.0"]
        assert warnings(response) == ["auto_matchmaking"]
        OrchestrationLock.objects.all().delete()
        make_rules(("CarConsumer2", GHOST, 1))
        response = pull(api, {**requirement(), "exclusivityDuration": 30}, consumer="CarConsumer2")
        assert instance_ids(response) == [GHOST]
        assert "exclusiveUntil" not in response.json()["results"][0]
        assert warnings(response) == ["auto_matchmaking", "not_exclusive"]
        assert not OrchestrationLock.objects.exists()

    def test_it_still_drops_expired_known_instances(self, api, mixed):
        ServiceInstance.objects.filter(service_instance_id=KNOWN).update(
            expires_at=timezone.now() - dt.timedelta(seconds=1))
        assert instance_ids(pull(api, requirement())) == [MQTT_ONLY, GHOST]


class IgnoredFlagTests:
    @pytest.mark.parametrize("flags, warning", [
        ({"ONLY_INTERCLOUD": True}, "ignoredFlags: [ONLY_INTERCLOUD]"),
        ({"ONLY_INTERCLOUD": False}, "ignoredFlags: [ONLY_INTERCLOUD]"),
        ({"only_exclusive ": True}, "ignoredFlags: [ONLY_EXCLUSIVE]"),
        ({"ONLY_EXCLUSIVE": "false"}, "ignoredFlags: [ONLY_EXCLUSIVE]"),
        ({"ALLOW_TRANSLATION": False}, "ignoredFlags: [ALLOW_TRANSLATION]"),
        ({"ALLOW_INTERCLOUD": False}, "ignoredFlags: [ALLOW_INTERCLOUD]"),
        # as Java's HashMap iterates them (by bucket), whatever the request order
        ({"ALLOW_TRANSLATION": False, "ONLY_EXCLUSIVE": True, "ONLY_INTERCLOUD": True,
          "ALLOW_INTERCLOUD": False, "MATCHMAKING": False},
         "ignoredFlags: [ALLOW_INTERCLOUD, ONLY_INTERCLOUD, ONLY_EXCLUSIVE, ALLOW_TRANSLATION]"),
        ({"ONLY_INTERCLOUD": True, "ALLOW_INTERCLOUD": False},
         "ignoredFlags: [ALLOW_INTERCLOUD, ONLY_INTERCLOUD]"),
    ])
    def test_it_accepts_flags_the_java_simple_store_ignores(self, api, mixed, flags, warning):
        response = pull(api, {**requirement(), "orchestrationFlags": flags})
        assert instance_ids(response) == [MQTT_ONLY, GHOST, KNOWN]  # none of them filters
        assert warnings(response) == [warning]

    def test_it_keeps_its_own_warnings_for_the_allow_flags_set_to_true(self, api, mixed):
        body = {**requirement(), "orchestrationFlags": {"ALLOW_TRANSLATION": True,
                                                        "ALLOW_INTERCLOUD": True}}
        assert warnings(pull(api, body)) == [
            "ignoredFlags: [ALLOW_INTERCLOUD, ALLOW_TRANSLATION]",
            "translation_not_supported", "intercloud_not_supported"]

    def test_it_honours_only_exclusive_with_an_exclusivity_duration(self, api, mixed):
        body = {**requirement(), "exclusivityDuration": 10,
                "orchestrationFlags": {"ONLY_EXCLUSIVE": True}}
        response = pull(api, body)
        assert instance_ids(response) == []
        assert warnings(response) == ["auto_matchmaking", "not_exclusive"]

    def test_it_puts_ignored_fields_before_ignored_flags(self, api, mixed):
        body = {**requirement(securityPolicies=["NONE"]),
                "orchestrationFlags": {"ONLY_INTERCLOUD": True}}
        assert warnings(pull(api, body)) == ["ignoredFields: [securityPolicies]",
                                             "ignoredFlags: [ONLY_INTERCLOUD]"]

    @pytest.mark.parametrize("flags, message", [
        ({"INVALID_FLAG": True}, "Invalid orchestration flag: INVALID_FLAG"),
        ({"only_remote": False}, "Invalid orchestration flag: ONLY_REMOTE"),
        ({"MATCHMAKING": None}, "Orchestration flag map contains null value"),
        ({"ONLY_PREFERRED": True}, "ONLY_PREFERRED flag is present, but no preferred provider "
                                   "is defined"),
    ])
    @reads_no_source
    def test_it_still_refuses_unknown_and_invalid_flags(self, api, flags, message):
        assert_error(pull(api, {"orchestrationFlags": flags}), 400, "INVALID_PARAMETER",
                     message, ORIGIN)
