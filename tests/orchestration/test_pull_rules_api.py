"""Pull over rules alone (no catalog entries): the simple store's ordering, flags and
validation, reference-simple §7 and §13.2."""
import pytest

from orchestration.history.job_writer import job_writer_flush
from orchestration.models import OrchestrationJob
from tests.helpers import as_system, assert_error, assert_unauthenticated
from tests.orchestration.helpers import PULL, instance_ids, pull
from tests.factories import make_rules
from tests.pull_sources import reads_no_source

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("pull_source")]

E1, E4 = "CarManager|carService1|4.0.0", "CarProvider|carService1|5.0.0"
E2, E3 = "CarManager|carService2|5.0.0", "CarManager|carService2|4.0.0"
ORIGIN = f"POST {PULL}"


@pytest.fixture
def car_rules():
    return make_rules(("CarConsumer1", E1, 2), ("CarConsumer1", E4, 3), ("CarConsumer1", E2, 4),
                      ("CarConsumer1", E3, 6), ("OtherConsumer", E1, 1))


@pytest.fixture
def service1_rules():
    return make_rules(("CarConsumer1", E1, 2), ("CarConsumer1", E4, 3),
                      ("CarConsumer1", "CarManager|carService1|6.0.0", 4))


def body(preferred=None, **flags):
    requirement = {"preferredProviders": preferred} if preferred else {}
    return {"serviceRequirement": requirement, "orchestrationFlags": flags}


class ReferenceExampleTests:
    @pytest.mark.parametrize("request_body, expected", [
        (body(), [E1, E4, E2, E3]),
        (body(MATCHMAKING=True), [E1, E2]),
        (body(["CarProvider"]), [E4, E1, E2, E3]),
        (body(["CarProvider"], MATCHMAKING=True), [E4, E2]),
        (body(["CarManager"], ONLY_PREFERRED=True), [E1, E2, E3]),
        (body(["CarManager"], MATCHMAKING=True, ONLY_PREFERRED=True), [E1, E2]),
        (body(["car-provider"], MATCHMAKING=True), [E4, E2]),
    ])
    def test_it_gives_the_reference_results_without_service_definition(
            self, api, car_rules, request_body, expected):
        assert instance_ids(pull(api, request_body)) == expected

    @pytest.mark.parametrize("flags, preferred, expected", [
        ({}, None, [E1, E4, "CarManager|carService1|6.0.0"]),
        ({"MATCHMAKING": True}, None, [E1]),
        ({}, ["CarProvider"], [E4, E1, "CarManager|carService1|6.0.0"]),
        ({"MATCHMAKING": True}, ["CarProvider"], [E4]),
        ({"ONLY_PREFERRED": True}, ["CarManager"], [E1, "CarManager|carService1|6.0.0"]),
        ({"ONLY_PREFERRED": True, "MATCHMAKING": True}, ["CarProvider"], [E4]),
    ])
    def test_it_gives_the_reference_results_for_one_service_definition(
            self, api, service1_rules, flags, preferred, expected):
        requirement = {"serviceDefinition": "car-service1"}
        if preferred:
            requirement["preferredProviders"] = preferred
        response = pull(api, {"serviceRequirement": requirement, "orchestrationFlags": flags})
        assert instance_ids(response) == expected

    def test_it_answers_a_rule_unknown_to_the_catalog_with_the_fields_of_its_id(self, api,
                                                                                car_rules):
        response = pull(api, {"serviceRequirement": {"serviceDefinition": "car-service1"},
                              "orchestrationFlags": {"MATCHMAKING": True}})
        assert response.json() == {"results": [{
            "serviceInstanceId": E1, "cloudIdentitifer": "LOCAL", "providerName": "CarManager",
            "serviceDefinitition": "carService1", "version": "4.0.0"}], "warnings": []}

    def test_it_accepts_flag_keys_in_any_case_and_string_values(self, api, car_rules):
        response = pull(api, {"serviceRequirement": {"serviceDefinition": "carService2"},
                              "orchestrationFlags": {"matchmaking ": "TRUE",
                                                     "only_preferred ": "false"}})
        assert instance_ids(response) == [E2]

    def test_it_keeps_only_the_given_versions(self, api, car_rules):
        response = pull(api, {"serviceRequirement": {"versions": ["4", "6.0.0"]}})
        assert instance_ids(response) == [E1, E3]

    def test_it_answers_no_rules_with_an_empty_result(self, api):
        response = pull(api)
        assert (response.status_code, response.json()) == (200, {"results": [], "warnings": []})

    def test_it_only_uses_the_requesters_rules(self, api, car_rules):
        assert instance_ids(pull(api, {}, consumer="other-consumer")) == [E1]

    def test_it_warns_about_flags_it_does_not_offer(self, api, car_rules):
        response = pull(api, body(ALLOW_TRANSLATION=True, ALLOW_INTERCLOUD="true"))
        assert response.json()["warnings"] == ["ignoredFlags: [ALLOW_INTERCLOUD, ALLOW_TRANSLATION]",
                                               "translation_not_supported",
                                               "intercloud_not_supported"]
        assert len(response.json()["results"]) == 4

    def test_it_records_each_pull_as_one_job(self, api, car_rules):
        pull(api, {"serviceRequirement": {"serviceDefinition": "carService1"}})
        job_writer_flush()  # outside a transaction (snapshot) the job is written behind
        job = OrchestrationJob.objects.get()
        assert (job.type, job.status, job.requester, job.target, job.service_definition,
                job.result_count, job.message) == (
            "PULL", "DONE", "CarConsumer1", "CarConsumer1", "carService1", 2,
            "2 local result(s)")
        assert job.created_at <= job.started_at <= job.finished_at

    @reads_no_source
    def test_it_does_not_record_a_refused_request(self, api):
        pull(api, body(INVALID_FLAG=True))
        assert not OrchestrationJob.objects.exists()


class PullValidationTests:
    @pytest.mark.parametrize("request_body, message", [
        ({"serviceRequirement": {"serviceDefinition": "inv@lid-service"}},
         "The specified service definition name does not match the naming convention: "
         "inv@lidService"),
        ({"serviceRequirement": {"preferredProviders": ["Provider1", ""]}},
         "Preferred providers contains null or empty element"),
        ({"serviceRequirement": {"preferredProviders": ["Inv@lidProvider"]}},
         "The specified system name does not match the naming convention: Inv@lidProvider"),
        ({"orchestrationFlags": {"MATCHMAKING": None}},
         "Orchestration flag map contains null value"),
        ({"orchestrationFlags": {"ONLY_PREFERRED": True}},
         "ONLY_PREFERRED flag is present, but no preferred provider is defined"),
        ({"orchestrationFlags": {"INVALID_FLAG": True}}, "Invalid orchestration flag: INVALID_FLAG"),
        ({"orchestrationFlags": {"matchmaking": "yes"}},
         "Invalid value of orchestration flag MATCHMAKING: yes (true or false expected)"),
        ({"orchestrationFlags": {"MATCHMAKING": 1}},
         "Invalid value of orchestration flag MATCHMAKING: 1 (true or false expected)"),
        ({"exclusivityDuration": 0}, "Exclusivity duration must be greater than 0"),
        ({"exclusivityDuration": "30"}, "exclusivityDuration: A valid integer is required."),
        ({"exclusivityDuration": 10**15},
         "exclusivityDuration: Ensure this value is less than or equal to 2147483647."),
        ({"qosRequirements": {"maxLatencyMs": "20"}},
         "Quality of service requirements are present, but QoS support is disabled"),
        ({"serviceRequirement": {"operations": ["query", " "]}},
         "Operation list contains empty element"),
        ({"serviceRequirement": {"operations": ["1st"]}},
         "The specified service operation name does not match the naming convention: 1st"),
        ({"serviceRequirement": {"versions": [None]}}, "Version list contains empty element"),
        ({"serviceRequirement": {"versions": ["1.x"]}},
         "Version verification failure: the version should only contain numbers and separator "
         ". characters"),
        ({"serviceRequirement": {"alivesAt": "2030-01-01"}},
         "Alives at time has an invalid time format, UTC string expected "
         "(example: 2024-10-11T14:30:00Z)"),
        ({"serviceRequirement": {"metadataRequirements": [None]}},
         "Metadata requirement list contains null element"),
        ({"serviceRequirement": {"metadataRequirements": [{"a": {"op": "NEAR", "value": 1}}]}},
         "Invalid metadata operation requirement: NEAR"),
        ({"serviceRequirement": {"interfaceTemplateNames": [""]}},
         "Interface template name list contains empty element"),
        ({"serviceRequirement": {"interfaceTemplateNames": ["1st"]}},
         "The specified interface template name does not match the naming convention: 1st"),
        ({"serviceRequirement": {"interfaceAddressTypes": ["IPV5"]}},
         "Invalid interface address type: IPV5"),
        ({"serviceRequirement": {"interfaceAddressTypes": [" "]}},
         "Interface address type list contains empty element"),
        ({"serviceRequirement": {"interfacePropertyRequirements": [None]}},
         "Interface property requirement list contains null element"),
        ({"serviceRequirement": {"securityPolicies": ["OPEN"]}}, "Invalid security policy: OPEN"),
        ({"serviceRequirement": {"securityPolicies": [""]}},
         "Security policy list contains empty element"),
        ({"serviceRequirement": []},
         "serviceRequirement: Invalid data. Expected a dictionary, but got list."),
        ({"serviceRequirement": {"versions": "1.0.0"}},
         'serviceRequirement.versions: Expected a list of items but got type "str".'),
        ({"orchestrationFlags": ["MATCHMAKING"]},
         'orchestrationFlags: Expected a dictionary of items but got type "list".'),
        ([], "Invalid data. Expected a dictionary, but got list."),
    ])
    @reads_no_source
    def test_it_refuses_invalid_requests(self, api, request_body, message):
        assert_error(pull(api, request_body), 400, "INVALID_PARAMETER", message, ORIGIN)

    @reads_no_source
    def test_it_refuses_an_invalid_requester_name(self, api):
        response = api.post(PULL, {}, format="json", **as_system("inv@lid"))
        assert_error(response, 400, "INVALID_PARAMETER",
                     "The specified system name does not match the naming convention: Inv@lid",
                     ORIGIN)

    def test_it_needs_an_identity_but_no_management_permission(self, api, car_rules):
        assert_unauthenticated(api.post(PULL, {}, format="json"), ORIGIN,
                               "No authorization header has been provided")
        assert pull(api, {}, consumer="CarConsumer1").status_code == 200
