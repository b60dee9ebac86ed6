"""What a Java Arrowhead 5 client does against us inside a local cloud (audit §0.1), end to
end with the production server and a fake ServiceRegistry over real HTTP, all on loopback:
find our services in the SR, call the operations exactly as registered (first interface,
operation by name, method to accessAddresses:accessPort basePath+path), and pull with the
request the Java `HttpCollectorDriver` builds. The provider's instance data comes from the SR."""
import http.client
import json

import pytest

from tests.concurrency import wait_until
from tests.fake_service_registry import FakeServiceRegistry
from tests.web_server import gunicorn_process

pytestmark = pytest.mark.django_db(transaction=True)

PROVIDER_INSTANCE = "TemperatureProvider|serviceOne|1.0.0"
PROVIDER_INTERFACE = {
    "templateName": "generic_http", "protocol": "http", "policy": "NONE",
    "properties": {"accessAddresses": ["127.0.0.1"], "accessPort": 9, "basePath": "/temperature",
                   "operations": {"query": {"path": "/query", "method": "GET"}}}}
# CU/collector/HttpCollectorDriver.createOrchRequestPayload (audit S12).
COLLECTOR_REQUEST = {
    "serviceRequirement": {"serviceDefinition": "serviceOne",
                           "interfaceTemplateNames": ["generic_http"]},
    "orchestrationFlags": {"MATCHMAKING": True, "ALLOW_INTERCLOUD": False,
                           "ALLOW_TRANSLATION": False}}


@pytest.fixture
def registry():
    fake = FakeServiceRegistry()
    yield fake
    fake.stop()


def registered(registry: FakeServiceRegistry, definition: str, timeout: float = 20) -> dict:
    """The first interface's properties of our registered service `definition`."""
    def found() -> list[dict]:
        return [instance for instance in list(registry.instances.values())
                if instance["serviceDefinition"]["name"] == definition]

    assert wait_until(found, timeout), f"{definition} was never registered"
    return found()[0]["interfaces"][0]["properties"]


def call(properties: dict, operation: str, body: dict, system: str) -> tuple[int, object]:
    entry = properties["operations"][operation]
    connection = http.client.HTTPConnection(properties["accessAddresses"][0],
                                            properties["accessPort"], timeout=15)
    connection.request(entry["method"], properties["basePath"] + entry["path"],
                       body=json.dumps(body).encode(),
                       headers={"Authorization": f"Bearer SYSTEM//{system}",
                                "Content-Type": "application/json"})
    response = connection.getresponse()
    status, raw = response.status, response.read()
    connection.close()
    return status, json.loads(raw) if raw else None


class JavaClientFlowTests:
    def test_a_client_that_only_knows_the_service_registry_gets_its_provider(self, registry,
                                                                           tmp_path):
        registry.put_instance(PROVIDER_INSTANCE, interfaces=[PROVIDER_INTERFACE],
                              metadata={"unit": "celsius"})
        env = {"SERVICE_REGISTRY_URL": registry.url, "SERVICE_REGISTRY_CACHE_SECONDS": "0"}
        with gunicorn_process(env, tmp_path / "gunicorn.log"):
            store = registered(registry, "serviceOrchestrationSimpleStoreManagement")
            orchestration = registered(registry, "serviceOrchestration")

            status, created = call(store, "create", {"candidates": [
                {"consumer": "TemperatureConsumer", "serviceInstanceId": PROVIDER_INSTANCE,
                 "priority": 1}]}, "Sysop")
            assert status == 201, created
            status, answer = call(orchestration, "pull", COLLECTOR_REQUEST,
                                  "TemperatureConsumer")

        assert status == 200, answer
        [result] = answer["results"]
        assert result["serviceInstanceId"] == PROVIDER_INSTANCE
        assert result["providerName"] == "TemperatureProvider"
        assert result["serviceDefinitition"] == "serviceOne"  # sic, the Java DTO's name
        assert result["metadata"] == {"unit": "celsius"}  # from the SR, not a local catalog
        assert [i["templateName"] for i in result["interfaces"]] == ["generic_http"]
        assert result["interfaces"][0]["properties"]["accessPort"] == 9
        # The instance is known (from the SR): every requirement was evaluated, no ignoredFields.
        assert not any(w.startswith("ignoredFields") for w in answer["warnings"])
        assert "ignoredFlags: [ALLOW_INTERCLOUD, ALLOW_TRANSLATION]" in answer["warnings"]


def lookup(registry: FakeServiceRegistry, body: dict, system: str) -> list[dict]:
    """A `serviceDiscovery` lookup as the Java collector makes it (terse), as `system`."""
    connection = http.client.HTTPConnection("127.0.0.1", registry.port, timeout=15)
    connection.request("POST", "/serviceregistry/service-discovery/lookup?verbose=false",
                       body=json.dumps(body).encode(),
                       headers={"Authorization": f"Bearer SYSTEM//{system}",
                                "Content-Type": "application/json"})
    response = connection.getresponse()
    answer = json.loads(response.read())
    connection.close()
    assert response.status == 200, answer
    return answer["entries"]


class CollectorDefaultModeTests:
    """The common library's HttpCollectorDriver in its default mode (SR_AND_ORCH, issue 33):
    the consumer finds no provider in the ServiceRegistry (the provider's instance is not
    discoverable by it), looks up `serviceOrchestration` of DynamicServiceOrchestration, then
    of FlexibleServiceOrchestration, pulls, and binds to `results[0].interfaces[0]`."""

    def test_an_unmodified_java_consumer_finds_its_provider_through_the_flexible_store(
            self, tmp_path, http_sink):
        registry = FakeServiceRegistry(direct_access=("FlexibleServiceOrchestration",))
        try:
            provider = {**PROVIDER_INTERFACE, "properties": {
                **PROVIDER_INTERFACE["properties"], "accessPort": http_sink.port}}
            registry.put_instance(PROVIDER_INSTANCE, interfaces=[provider],
                                  provider_metadata={"vendor": "acme"})
            env = {"SERVICE_REGISTRY_URL": registry.url, "SERVICE_REGISTRY_CACHE_SECONDS": "0",
                   "ORCHESTRATION_STRATEGY": "flexible-store"}
            with gunicorn_process(env, tmp_path / "gunicorn.log"):
                store = registered(registry, "serviceOrchestrationFlexibleStoreManagement")
                status, created = call(store, "create", {"entries": [
                    {"consumer": "TemperatureConsumer", "serviceDefinition": "serviceOne",
                     "providerMetadataRequirements": [{"vendor": "acme"}]}]}, "Sysop")
                assert status == 201, created

                consumer = "TemperatureConsumer"
                assert lookup(registry, {"serviceDefinitionNames": ["serviceOne"],
                                         "interfaceTemplateNames": ["generic_http"]},
                              consumer) == []
                orchestrators = [lookup(registry, {
                    "serviceDefinitionNames": ["serviceOrchestration"],
                    "providerNames": [name], "interfaceTemplateNames": ["generic_http"]},
                    consumer) for name in ("DynamicServiceOrchestration",
                                           "FlexibleServiceOrchestration")]
                assert orchestrators[0] == []
                [orchestrator] = orchestrators[1]
                assert orchestrator["metadata"]["orchestrationStrategy"] == "flexibleStore"
                status, answer = call(orchestrator["interfaces"][0]["properties"], "pull",
                                      COLLECTOR_REQUEST, consumer)
        finally:
            registry.stop()

        assert status == 200, answer
        interface = answer["results"][0]["interfaces"][0]
        properties = interface["properties"]
        connection = http.client.HTTPConnection(properties["accessAddresses"][0],
                                                properties["accessPort"], timeout=15)
        connection.request(properties["operations"]["query"]["method"],
                           properties["basePath"] + properties["operations"]["query"]["path"])
        assert connection.getresponse().status == http_sink.status  # bound: the provider answered
        connection.close()
        assert http_sink.requests[0].path == "/temperature/query"
