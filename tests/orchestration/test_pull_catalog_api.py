"""Pull honouring the whole service requirement against catalog entries (SPEC §5 steps 2–5).
A rule whose instance the catalog does not know (UNKNOWN) is kept, as the Java simple store keeps
it: the requirements filter known instances only (tests/orchestration/test_pull_java_api.py)."""
import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from orchestration.models import OrchestrationJob
from store.models import ServiceInstance
from tests.orchestration.helpers import instance_ids, pull
from tests.factories import make_instances, make_rules
from tests.pull_sources import database_only
from tests.store.helpers import http_interface, instance_body, mqtt_interface

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("pull_source")]

A, B = "ProviderA|temperatureInfo|1.0.0", "ProviderB|temperatureInfo|2.0.0"
C, P = "ProviderC|temperatureInfo|1.0.0", "ProviderA|pressureInfo|1.0.0"
UNKNOWN = "Ghost|temperatureInfo|1.0.0"


def utc(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def secured(policy: str, **properties) -> dict:
    interface = http_interface(policy=policy)
    interface["properties"] = {**interface["properties"], **properties}
    return interface


@pytest.fixture
def catalog():
    in_a_day = utc(timezone.now() + dt.timedelta(days=1))
    make_instances(
        instance_body("ProviderA", "temperatureInfo", "1.0.0", expiresAt=in_a_day,
                      metadata={"unit": "celsius", "accuracy": 0.5},
                      interfaces=[http_interface(), mqtt_interface()]),
        instance_body("ProviderB", "temperatureInfo", "2.0.0",
                      metadata={"unit": "kelvin", "accuracy": 0.1},
                      interfaces=[secured("TIME_LIMITED_TOKEN_AUTH",
                                          accessAddresses=["10.0.0.5", "plant.example.com"],
                                          basePath="/b")]),
        instance_body("ProviderC", "temperatureInfo", "1.0.0", metadata={"unit": "celsius"},
                      interfaces=[http_interface(properties={
                          "accessAddresses": ["127.0.0.1"], "accessPort": 9000,
                          "basePath": "/c"})]),
        instance_body("ProviderA", "pressureInfo", "1.0.0", metadata={}),
    )
    make_rules(("CarConsumer1", B, 1), ("CarConsumer1", UNKNOWN, 2), ("CarConsumer1", A, 3),
               ("CarConsumer1", C, 4), ("CarConsumer1", P, 1))
    return in_a_day


def requirement(**fields) -> dict:
    return {"serviceRequirement": {"serviceDefinition": "temperatureInfo", **fields}}


class PullCatalogTests:
    def test_it_enriches_results_with_the_catalog_in_priority_order(self, api, catalog):
        response = pull(api, requirement())
        assert instance_ids(response) == [B, UNKNOWN, A, C]
        results = response.json()["results"]
        a = results[2]
        assert a["aliveUntil"] == catalog
        assert a["metadata"] == {"unit": "celsius", "accuracy": 0.5}
        assert [i["templateName"] for i in a["interfaces"]] == ["generic_http", "generic_mqtt"]
        assert a["interfaces"][0]["properties"]["accessPort"] == 8080
        assert "aliveUntil" not in results[0]
        assert set(results[1]) == {"serviceInstanceId", "cloudIdentitifer", "providerName",
                                   "serviceDefinitition", "version"}

    def test_it_orders_rules_of_several_services_by_priority_then_service(self, api, catalog):
        assert instance_ids(pull(api, {})) == [P, B, UNKNOWN, A, C]

    def test_it_drops_expired_instances(self, api, catalog):
        ServiceInstance.objects.filter(service_instance_id=A).update(
            expires_at=timezone.now() - dt.timedelta(seconds=1))
        assert A not in instance_ids(pull(api, requirement()))

    def test_it_keeps_instances_alive_at_the_requested_time(self, api, catalog):
        in_two_days = utc(timezone.now() + dt.timedelta(days=2))
        assert instance_ids(pull(api, requirement(alivesAt=in_two_days))) == [B, UNKNOWN, C]

    def test_it_filters_by_metadata_requirements(self, api, catalog):
        body = requirement(metadataRequirements=[
            {"unit": "kelvin"}, {"unit": "celsius", "accuracy": {"op": "LESS_THAN", "value": 1}}])
        assert instance_ids(pull(api, body)) == [B, UNKNOWN, A]

    def test_it_keeps_unknown_instances_naming_each_requirement_it_could_not_evaluate(
            self, api, catalog):
        for fields in ({"metadataRequirements": [{}]}, {"operations": ["query"]},
                       {"interfaceTemplateNames": ["generic_http"]},
                       {"securityPolicies": ["NONE"]}, {"interfaceAddressTypes": ["IPV4"]},
                       {"interfacePropertyRequirements": [{"basePath": "/c"}]},
                       {"alivesAt": utc(timezone.now())}):
            response = pull(api, requirement(**fields))
            assert UNKNOWN in instance_ids(response), fields
            assert response.json()["warnings"] == [f"ignoredFields: [{next(iter(fields))}]"]

    def test_it_keeps_unknown_instances_for_version_filters(self, api, catalog):
        assert instance_ids(pull(api, requirement(versions=["1"]))) == [UNKNOWN, A, C]

    def test_it_keeps_only_qualifying_interfaces(self, api, catalog):
        response = pull(api, requirement(interfaceTemplateNames=["generic_mqtt"]))
        assert instance_ids(response) == [UNKNOWN, A]
        assert [i["templateName"] for i in response.json()["results"][1]["interfaces"]] == [
            "generic_mqtt"]

    def test_it_filters_interfaces_by_properties(self, api, catalog):
        body = requirement(interfacePropertyRequirements=[{"basePath": "/c"},
                                                          {"accessPort": 1883}])
        response = pull(api, body)
        assert instance_ids(response) == [UNKNOWN, A, C]
        assert [i["templateName"] for i in response.json()["results"][1]["interfaces"]] == [
            "generic_mqtt"]

    def test_it_narrows_address_lists_to_the_requested_types(self, api, catalog):
        response = pull(api, requirement(interfaceAddressTypes=["hostname"]))
        assert instance_ids(response) == [B, UNKNOWN, A]
        by_id = {r["serviceInstanceId"]: r for r in response.json()["results"]}
        assert by_id[B]["interfaces"][0]["properties"]["accessAddresses"] == ["plant.example.com"]
        assert [i["templateName"] for i in by_id[A]["interfaces"]] == ["generic_mqtt"]
        ipv4 = pull(api, requirement(interfaceAddressTypes=["IPV4"])).json()["results"]
        assert ipv4[0]["interfaces"][0]["properties"]["accessAddresses"] == ["10.0.0.5"]

    def test_it_filters_by_security_policy(self, api, catalog):
        body = requirement(securityPolicies=["time_limited_token_auth"])
        assert instance_ids(pull(api, body)) == [B, UNKNOWN]

    def test_it_requires_declared_operations_but_accepts_interfaces_declaring_none(self, api,
                                                                                     catalog):
        response = pull(api, requirement(operations=["query"]))
        assert instance_ids(response) == [B, UNKNOWN, A, C]
        assert instance_ids(pull(api, requirement(operations=["set-point"]))) == [UNKNOWN, C]

    def test_it_puts_preferred_providers_first_and_can_keep_only_them(self, api, catalog):
        body = requirement(preferredProviders=["provider-c", "ProviderA"])
        assert instance_ids(pull(api, body)) == [A, C, B, UNKNOWN]
        body["orchestrationFlags"] = {"ONLY_PREFERRED": True}
        assert instance_ids(pull(api, body)) == [A, C]

    def test_it_keeps_the_best_candidate_per_service_with_matchmaking(self, api, catalog):
        body = {"serviceRequirement": {"interfaceTemplateNames": ["generic_http"]},
                "orchestrationFlags": {"MATCHMAKING": True}}
        assert instance_ids(pull(api, body)) == [P, B]

    # The database source's own queries, and the job written in the pull's transaction: the
    # snapshot reads none of these tables (test_pull_snapshot.py `test_it_answers_from_memory`).
    @database_only
    def test_it_reads_in_a_bounded_number_of_queries(self, api, django_assert_max_num_queries):
        bodies = [instance_body(f"Provider{n}", "temperatureInfo", "1.0.0",
                                interfaces=[http_interface(), mqtt_interface(),
                                            http_interface(templateName="generic_https",
                                                           protocol="https")])
                  for n in range(60)]
        make_instances(*bodies)
        make_rules(*[("Bulk", f"Provider{n}|temperatureInfo|1.0.0", n + 1) for n in range(60)])
        with CaptureQueriesContext(connection) as queries:
            response = pull(api, requirement(interfaceTemplateNames=["generic_http"]),
                            consumer="Bulk")
        assert len(response.json()["results"]) == 60
        # rules, instances, interfaces, locks, job (+ savepoints of the token write)
        assert len(queries) <= 8, [q["sql"][:80] for q in queries]
        job_writes = [q for q in queries if "orchestration_orchestrationjob" in q["sql"]]
        assert len(job_writes) == 1 and job_writes[0]["sql"].startswith("INSERT")
        assert OrchestrationJob.objects.get(requester="Bulk").result_count == 60


class FreePropertiesTests:
    def test_it_does_not_match_non_string_entries_of_other_templates(self, api):
        odd = {"templateName": "custom_bus", "protocol": "bus", "policy": "NONE",
               "properties": {"operations": [{"a": 1}, "query"], "accessAddresses": [1, "10.0.0.7"]}}
        make_instances(instance_body("Odd", "temperatureInfo", interfaces=[odd]))
        make_rules(("CarConsumer1", "Odd|temperatureInfo|1.0.0", 1))
        assert instance_ids(pull(api, requirement(operations=["query"]))) == [
            "Odd|temperatureInfo|1.0.0"]
        response = pull(api, requirement(interfaceAddressTypes=["IPV4"]))
        assert response.json()["results"][0]["interfaces"][0]["properties"][
            "accessAddresses"] == ["10.0.0.7"]
