import datetime as dt

import pytest
from django.utils import timezone

from store.models import ServiceInstance, ServiceInterface
from tests.concurrency import run_together
from tests.helpers import as_system, assert_forbidden, assert_refused
from tests.factories import make_instances
from tests.store.helpers import (
    I_CREATE,
    http_interface,
    instance_body,
    mqtt_interface,
    post,
    stored_instances,
)

pytestmark = pytest.mark.django_db

ORIGIN = f"POST {I_CREATE}"
EXCLUSIVITY = ("allowExclusivity metadata must be a non-negative integer or the string "
               "representation of one, at most 2147483647")


def create(api, *bodies, **kwargs):
    return post(api, I_CREATE, {"instances": list(bodies)}, **kwargs)


def future(seconds: int = 3600) -> str:
    return (timezone.now() + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


class InstanceCreateApiTests:
    def test_it_creates_instances_and_answers_201_with_them(self, api):
        expires = future()
        response = create(api, instance_body(expiresAt=expires),
                          instance_body("other-provider", "temperature_info", "2",
                                        interfaces=[mqtt_interface(), http_interface()]))
        assert response.status_code == 201, response.content
        body = response.json()
        assert body["count"] == 2
        first, second = body["entries"]
        assert set(first) == {"instanceId", "provider", "serviceDefinition", "version",
                              "expiresAt", "metadata", "interfaces", "createdAt", "updatedAt"}
        assert first["instanceId"] == "TemperatureProvider|temperatureInfo|1.0.0"
        assert (first["provider"], first["serviceDefinition"], first["version"]) == (
            "TemperatureProvider", "temperatureInfo", "1.0.0")
        assert first["expiresAt"] == expires
        assert first["metadata"] == {"unit": "celsius"}
        assert first["interfaces"] == [{
            "templateName": "generic_http", "protocol": "http", "policy": "NONE",
            "properties": {"accessAddresses": ["127.0.0.1"], "accessPort": 8080,
                           "basePath": "/temperature",
                           "operations": {"query": {"path": "/query", "method": "GET"}}}}]
        assert second["instanceId"] == "OtherProvider|temperatureInfo|2.0.0"
        assert second["expiresAt"] is None
        assert [i["templateName"] for i in second["interfaces"]] == ["generic_mqtt",
                                                                     "generic_http"]
        assert ServiceInterface.objects.count() == 3

    def test_it_normalizes_interface_values(self, api):
        interface = http_interface(templateName="GENERIC-HTTP", protocol=" HTTP ",
                                   policy=" time_limited_token_auth ")
        interface["properties"] = {
            "accessAddresses": ["  LocalHost ", "::1"], "accessPort": 80, "basePath": "/",
            "operations": {"Query_Temp": {"path": " /q ", "method": "post"}}}
        response = create(api, instance_body(interfaces=[interface]))
        stored = response.json()["entries"][0]["interfaces"][0]
        assert (stored["templateName"], stored["protocol"], stored["policy"]) == (
            "generic_http", "http", "TIME_LIMITED_TOKEN_AUTH")
        assert stored["properties"]["accessAddresses"] == [
            "localhost", "0000:0000:0000:0000:0000:0000:0000:0001"]
        assert stored["properties"]["operations"] == {"query-temp": {"path": "/q",
                                                                     "method": "POST"}}

    def test_it_takes_the_protocol_from_a_known_template(self, api):
        response = create(api, instance_body(interfaces=[http_interface(protocol=None)]))
        assert response.json()["entries"][0]["interfaces"][0]["protocol"] == "http"

    def test_it_accepts_other_templates_with_free_properties(self, api):
        custom = {"templateName": "opc_ua", "protocol": "opc.tcp", "policy": "CERT_AUTH",
                  "properties": {"endpoint": "opc.tcp://127.0.0.1:4840", "anything": [1, 2]}}
        response = create(api, instance_body(interfaces=[custom]))
        assert response.status_code == 201
        assert response.json()["entries"][0]["interfaces"][0]["properties"]["anything"] == [1, 2]

    def test_it_replaces_an_instance_with_the_same_id(self, api):
        first = make_instances(instance_body(metadata={"v": 1}))[0]
        response = create(api, instance_body(metadata={"v": 2},
                                             interfaces=[mqtt_interface()]))
        assert response.status_code == 201
        stored = ServiceInstance.objects.get()
        assert stored.metadata == {"v": 2}
        assert [i.template_name for i in stored.interfaces.all()] == ["generic_mqtt"]
        assert stored.created_at == first.created_at
        assert stored.updated_at > first.updated_at

    @pytest.mark.parametrize("metadata", [{"allowExclusivity": 120}, {"allowExclusivity": "120"},
                                          {"allowExclusivity": 0}, {"nested": {"list": [{"a": 1}]}}])
    def test_it_accepts_valid_metadata(self, api, metadata):
        assert create(api, instance_body(metadata=metadata)).status_code == 201

    @pytest.mark.parametrize("body, message", [
        ({"instances": []}, "Instance list is empty"),
        ({}, "Instance list is empty"),
        ({"instances": [None]}, "Instance list contains null element"),
        ({"instances": [instance_body(), instance_body(version="1.0")]},
         "Duplicated instance: TemperatureProvider|temperatureInfo|1.0.0"),
        ({"instances": [instance_body(systemName=None)]},
         "The specified system name does not match the naming convention: null"),
        ({"instances": [instance_body(systemName="inv@lid")]},
         "The specified system name does not match the naming convention: Inv@lid"),
        ({"instances": [instance_body(serviceDefinitionName="2nd")]},
         "The specified service definition name does not match the naming convention: 2nd"),
        ({"instances": [instance_body(version="1.x")]},
         "Version verification failure: the version should only contain numbers and "
         "separator . characters"),
        ({"instances": [instance_body(expiresAt="2030-01-01")]},
         "Expiration time has an invalid time format, UTC string expected "
         "(example: 2024-10-11T14:30:00Z)"),
        ({"instances": [instance_body(expiresAt="2020-01-01T00:00:00Z")]},
         "Expiration time is in the past"),
        ({"instances": [instance_body(metadata={"a.b": 1})]},
         "Invalid metadata key: a.b, it should not contain . character"),
        ({"instances": [instance_body(metadata={"list": [{"x.y": 1}]})]},
         "Invalid metadata key: x.y, it should not contain . character"),
        ({"instances": [instance_body(metadata=[1])]}, "Metadata should be a JSON object"),
        ({"instances": [instance_body(metadata={"allowExclusivity": -1})]}, EXCLUSIVITY),
        ({"instances": [instance_body(metadata={"allowExclusivity": "ten"})]}, EXCLUSIVITY),
        ({"instances": [instance_body(metadata={"allowExclusivity": 1.5})]}, EXCLUSIVITY),
        ({"instances": [instance_body(metadata={"allowExclusivity": 10**15})]}, EXCLUSIVITY),
        ({"instances": [instance_body(interfaces=[{"templateName": "custom", "policy": "NONE",
                                                   "protocol": "p" * 64, "properties": {}}])]},
         "Interface protocol is too long (at most 63 characters)"),
        ({"instances": [instance_body(interfaces=[])]}, "Service interface list is empty"),
        ({"instances": [instance_body(interfaces=None)]}, "Service interface list is empty"),
        ({"instances": [instance_body(interfaces=[None])]},
         "Service interface list contains null element"),
        ({"instances": [{"systemName": 5}]}, "instances[0].systemName: Not a valid string."),
        ({"instances": {"a": 1}}, 'instances: Expected a list of items but got type "dict".'),
    ])
    def test_it_refuses_invalid_instances(self, api, body, message):
        assert_refused(lambda: post(api, I_CREATE, body), message, ORIGIN, state=stored_instances)

    @pytest.mark.parametrize("interface, message", [
        (http_interface(templateName=None), "Interface template name is missing"),
        (http_interface(templateName="1st"),
         "The specified interface template name does not match the naming convention: 1st"),
        ({**http_interface(), "templateName": "custom", "protocol": None},
         "Interface protocol is missing"),
        (http_interface(protocol="https"), "https protocol is invalid for generic_http"),
        (mqtt_interface(protocol="http"), "http protocol is invalid for generic_mqtt"),
        (http_interface(policy=None), "Interface policy is missing"),
        (http_interface(policy="MAGIC"), "Invalid interface policy: MAGIC"),
        (http_interface(properties=None), "Interface properties are missing"),
        (http_interface(properties=[1]), "Interface properties should be a JSON object"),
        (http_interface(properties={"accessPort": 80, "basePath": "/"}),
         "accessAddresses interface property is missing for generic_http"),
        (http_interface(properties={"accessAddresses": ["localhost"], "basePath": "/"}),
         "accessPort interface property is missing for generic_http"),
        (http_interface(properties={"accessAddresses": ["localhost"], "accessPort": 80}),
         "basePath interface property is missing for generic_http"),
        (mqtt_interface(properties={"accessAddresses": ["localhost"], "accessPort": 1883,
                                    "baseTopic": "t/"}),
         "operations interface property is missing for generic_mqtt"),
    ])
    def test_it_refuses_invalid_interfaces(self, api, interface, message):
        assert_refused(lambda: create(api, instance_body(interfaces=[interface])), message, ORIGIN,
                       state=stored_instances)

    @pytest.mark.parametrize("prop, value, message", [
        ("accessAddresses", [], "accessAddresses: Property value should be a non-empty list "
                                "of strings"),
        ("accessAddresses", "localhost", "accessAddresses: Property value should be a "
                                         "non-empty list of strings"),
        ("accessAddresses", ["localhost", 5], "accessAddresses: Property value should be a "
                                              "list of strings"),
        ("accessAddresses", [" "], "accessAddresses: Property value should be a list of "
                                   "non-blank strings"),
        ("accessAddresses", ["aa:bb:cc:dd:ee:ff"],
         "Unacceptable address type in property value: MAC"),
        ("accessAddresses", ["0.0.0.0"],
         "Address verification failure: unspecified address is not allowed: 0.0.0.0"),
        ("accessAddresses", ["-bad.example.com"],
         "Address verification failure: invalid host name: -bad.example.com"),
        ("accessPort", "8080", "accessPort: Property value should be an integer"),
        ("accessPort", 80.0, "accessPort: Property value should be an integer"),
        ("accessPort", True, "accessPort: Property value should be an integer"),
        ("accessPort", 0, "accessPort: Invalid property value"),
        ("accessPort", 65536, "accessPort: Invalid property value"),
        ("basePath", 5, "basePath: Property value should be a string"),
        ("operations", ["query"], "operations: Property value should be a map of operations"),
        ("operations", {}, "operations: Property value should be a non-empty map"),
        ("operations", {"1st": {"path": "/", "method": "GET"}},
         "The specified service operation name does not match the naming convention: 1st"),
        ("operations", {"query": "/q"}, "operations: Value should be an object with path and "
                                        "method"),
        ("operations", {"query": {"path": " ", "method": "GET"}},
         "operations: Path should be non-empty"),
        ("operations", {"query": {"path": "/q", "method": "FETCH"}},
         "operations: Method should be a standard HTTP method"),
        ("a.b", 1, "Invalid interface property key: a.b, it should not contain . character"),
    ])
    def test_it_validates_http_properties(self, api, prop, value, message):
        interface = http_interface()
        interface["properties"] = {**interface["properties"], prop: value}
        assert_refused(lambda: create(api, instance_body(interfaces=[interface])), message, ORIGIN,
                       state=stored_instances)

    @pytest.mark.parametrize("value, message", [
        ([], "operations: Property value should be a non-empty set/list"),
        ({"query": {}}, "operations: Property value should be a non-empty set/list"),
        (["query", 1], "operations: Property value should be a set/list of string values"),
        (["Bad Op!"], "The specified service operation name does not match the naming "
                      "convention: bad-op!"),
    ])
    def test_it_validates_mqtt_operations(self, api, value, message):
        interface = mqtt_interface()
        interface["properties"] = {**interface["properties"], "operations": value}
        assert_refused(lambda: create(api, instance_body(interfaces=[interface])), message, ORIGIN,
                       state=stored_instances)

    def test_it_deduplicates_and_normalizes_mqtt_operations(self, api):
        interface = mqtt_interface()
        interface["properties"] = {**interface["properties"],
                                   "operations": ["Query", "query", "set_value"]}
        response = create(api, instance_body(interfaces=[interface], systemName="P"))
        assert response.json()["entries"][0]["interfaces"][0]["properties"]["operations"] == [
            "query", "set-value"]

    def test_it_limits_the_number_of_instances(self, api, settings):
        settings.MAX_BULK_SIZE = 1
        assert_refused(lambda: create(api, instance_body(), instance_body("Other")),
                       "Too many instances: at most 1 may be sent in one request", ORIGIN,
                       state=stored_instances)

    def test_it_needs_the_add_permission(self, api):
        response = create(api, instance_body(), headers=as_system("Manager"))
        assert_forbidden(response, ORIGIN)


@pytest.mark.django_db(transaction=True)
class InstanceCreateConcurrencyTests:
    def test_it_answers_two_concurrent_creates_of_a_new_id_with_201(self):
        from rest_framework.test import APIClient

        from tests.helpers import SYSOP

        def create_one(unit: str):
            return lambda: APIClient().post(
                I_CREATE, {"instances": [instance_body(metadata={"unit": unit})]},
                format="json", **SYSOP).status_code

        statuses = run_together(*(create_one(f"u{n}") for n in range(4)))
        assert statuses == [201] * 4
        assert ServiceInstance.objects.count() == 1
        assert ServiceInterface.objects.count() == 1

    def test_it_keeps_latency_measurements_when_an_instance_is_registered_again(self):
        make_instances(instance_body())
        ServiceInterface.objects.update(latency_ms=3.5, latency_measured_at=timezone.now())
        make_instances(instance_body(metadata={"unit": "kelvin"}))
        assert ServiceInterface.objects.get().latency_ms == 3.5
        moved = http_interface()
        moved["properties"] = {**moved["properties"], "accessPort": 9999}
        make_instances(instance_body(interfaces=[moved]))
        assert ServiceInterface.objects.get().latency_ms is None
