"""Issue 13's "done": with the production server in a local cloud of stand-ins over real HTTP
(ServiceRegistry, ConsumerAuthorization, Blacklist, all on loopback and all found through the
ServiceRegistry), a system granted rights in ConsumerAuthorization manages rules, a token from
pull verifies at ConsumerAuthorization, and blacklisted systems are refused."""
import http.client
import json

import pytest

from tests.fake_blacklist import FakeBlacklist
from tests.fake_consumer_authorization import FakeConsumerAuthorization
from tests.fake_service_registry import FakeServiceRegistry
from tests.serviceregistry.test_java_client_flow import registered
from tests.web_server import gunicorn_process

pytestmark = pytest.mark.django_db(transaction=True)

NAME = "SimpleStoreServiceOrchestration"
PROVIDER = "TemperatureProvider"
INSTANCE = f"{PROVIDER}|temperatureInfo|1.0.0"
INTERFACE = {"templateName": "generic_http", "protocol": "http",
             "policy": "TIME_LIMITED_TOKEN_AUTH",
             "properties": {"accessAddresses": ["127.0.0.1"], "accessPort": 9,
                            "basePath": "/temperature",
                            "operations": {"query": {"path": "/query", "method": "GET"}}}}
PULL = {"serviceRequirement": {"serviceDefinition": "temperatureInfo"}}


def call(properties: dict, operation: str, body: object, system: str) -> tuple[int, object]:
    """An operation as registered, with a declared identity (as a Java client calls it)."""
    entry = properties["operations"][operation]
    return request(properties["accessAddresses"][0], properties["accessPort"],
                   entry["method"], properties["basePath"] + entry["path"], body, system)


def request(host: str, port: int, method: str, path: str, body: object,
            system: str) -> tuple[int, object]:
    connection = http.client.HTTPConnection(host, port, timeout=15)
    connection.request(method, path, body=None if body is None else json.dumps(body).encode(),
                       headers={"Authorization": f"Bearer SYSTEM//{system}",
                                "Content-Type": "application/json"})
    response = connection.getresponse()
    status, raw = response.status, response.read()
    connection.close()
    return status, json.loads(raw) if raw else None


@pytest.fixture
def cloud():
    registry, ca, blacklist = FakeServiceRegistry(), FakeConsumerAuthorization(), FakeBlacklist()
    for system, fake in (("ConsumerAuthorization", ca), ("Blacklist", blacklist)):
        for definition, interfaces in fake.service_instances().items():
            registry.put_instance(f"{system}|{definition}|1.0.0", interfaces=interfaces)
    registry.put_instance(INSTANCE, interfaces=[INTERFACE])
    yield registry, ca, blacklist
    for fake in (registry, ca, blacklist):
        fake.stop()


class CloudAuthorizationFlowTests:
    def test_rights_tokens_and_the_blacklist_come_from_the_cloud(self, cloud, tmp_path):
        registry, ca, blacklist = cloud
        env = {"SERVICE_REGISTRY_URL": registry.url, "SERVICE_REGISTRY_CACHE_SECONDS": "0",
               "MANAGEMENT_POLICY": "authorization", "CONSUMER_AUTHORIZATION_CACHE_SECONDS": "0",
               "AUTHORIZATION_TOKENS": "consumer-authorization",
               "BLACKLIST_FILTER": "true", "BLACKLIST_CACHE_SECONDS": "0"}
        with gunicorn_process(env, tmp_path / "gunicorn.log"):
            store = registered(registry, "serviceOrchestrationSimpleStoreManagement")
            orchestration = registered(registry, "serviceOrchestration")
            rule = {"candidates": [{"consumer": "TemperatureConsumer",
                                    "serviceInstanceId": INSTANCE, "priority": 1}]}

            # Management rights are ConsumerAuthorization policies.
            status, refused = call(store, "create", rule, "PlantManager")
            assert (status, refused["errorMessage"]) == (
                403, "Requester has no management permission")
            ca.grant("PlantManager", NAME, "serviceOrchestrationSimpleStoreManagement",
                     "create")
            status, created = call(store, "create", rule, "PlantManager")
            assert status == 201, created
            assert created["entries"][0]["createdBy"] == "PlantManager"

            # The token of a pull verifies at ConsumerAuthorization, for the provider.
            status, answer = call(orchestration, "pull", PULL, "TemperatureConsumer")
            assert status == 200, answer
            [result] = answer["results"]
            token = result["authorizationTokens"]["TIME_LIMITED_TOKEN_AUTH"]["temperatureInfo"]
            host, port = ca.url.removeprefix("http://").split(":")
            status, verified = request(host, int(port), "GET",
                                       f"/consumerauthorization/authorization-token/token/"
                                       f"verify/{token['token']}", None, PROVIDER)
            assert status == 200 and verified["verified"] is True, verified
            assert verified["consumer"] == "TemperatureConsumer"

            # Blacklisted requesters are refused, blacklisted providers dropped.
            blacklist.put("TemperatureConsumer")
            status, refused = call(orchestration, "pull", PULL, "TemperatureConsumer")
            assert (status, refused["errorMessage"]) == (
                403, "TemperatureConsumer system is blacklisted")
            blacklist.put(PROVIDER)
            status, answer = call(store, "create", {"candidates": [
                {"consumer": "OtherConsumer", "serviceInstanceId": INSTANCE,
                 "priority": 1}]}, "PlantManager")
            assert status == 201, answer
            status, answer = call(orchestration, "pull", PULL, "OtherConsumer")
            assert (status, answer["results"]) == (200, [])
