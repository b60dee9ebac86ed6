"""Builders and request helpers for the rule store tests."""
from store.models import Rule, ServiceInstance
from tests.helpers import SYSOP

BASE = "/serviceorchestration/orchestration/mgmt/simple-store"
QUERY, CREATE = f"{BASE}/query", f"{BASE}/create"
MODIFY, REMOVE = f"{BASE}/modify-priorities", f"{BASE}/remove"


def post(api, path: str, body, headers=SYSOP):
    return api.post(path, body, format="json", **headers)


def entry(consumer: str, instance_id: str, priority) -> dict:
    return {"consumer": consumer, "serviceInstanceId": instance_id, "priority": priority}


INSTANCES = "/serviceorchestration/orchestration/mgmt/service-instances"
I_CREATE, I_UPDATE = f"{INSTANCES}/create", f"{INSTANCES}/update"
I_QUERY, I_REMOVE = f"{INSTANCES}/query", f"{INSTANCES}/remove"


def http_interface(**overrides) -> dict:
    """A valid generic_http interface on a loopback address."""
    interface = {"templateName": "generic_http", "protocol": "http", "policy": "NONE",
                 "properties": {"accessAddresses": ["127.0.0.1"], "accessPort": 8080,
                                "basePath": "/temperature",
                                "operations": {"query": {"path": "/query", "method": "GET"}}}}
    interface.update(overrides)
    return interface


def mqtt_interface(**overrides) -> dict:
    interface = {"templateName": "generic_mqtt", "protocol": "tcp", "policy": "NONE",
                 "properties": {"accessAddresses": ["localhost"], "accessPort": 1883,
                                "baseTopic": "plant/temperature/", "operations": ["query"]}}
    interface.update(overrides)
    return interface


def instance_body(provider: str = "TemperatureProvider", definition: str = "temperatureInfo",
                  version: str = "1.0.0", **overrides) -> dict:
    body = {"systemName": provider, "serviceDefinitionName": definition, "version": version,
            "expiresAt": None, "metadata": {"unit": "celsius"}, "interfaces": [http_interface()]}
    body.update(overrides)
    return body



def stored_rules() -> set[tuple]:
    """Every stored rule, to compare before and after a request."""
    return set(Rule.objects.values_list("id", "consumer", "service_definition",
                                        "service_instance_id", "priority", "updated_at"))


def stored_instances() -> list[tuple]:
    """Every stored instance, to compare before and after a request."""
    return list(ServiceInstance.objects.order_by("pk").values_list("pk", "metadata",
                                                                   "updated_at"))
