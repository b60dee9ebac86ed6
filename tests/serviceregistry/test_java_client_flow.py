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
