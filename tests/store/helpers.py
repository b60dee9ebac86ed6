"""Builders and request helpers for the rule store tests."""
from store.models import Rule
from store.services.rules import RuleDraft, rule_create_many
from tests.helpers import SYSOP

BASE = "/serviceorchestration/orchestration/mgmt/simple-store"
QUERY, CREATE = f"{BASE}/query", f"{BASE}/create"
MODIFY, REMOVE = f"{BASE}/modify-priorities", f"{BASE}/remove"


def make_rules(*specs: tuple[str, str, int], requester: str = "Sysop") -> list[Rule]:
    """Store rules given as (consumer, serviceInstanceId, priority) through the service."""
    return rule_create_many(drafts=[RuleDraft(*spec) for spec in specs], requester=requester,
                            limit=None)


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


def make_instances(*bodies: dict):
    """Store instances (create-request shape) through the service."""
    from store.serializers.instances import (
        InstanceCreateSerializer,
        instance_drafts_from,
    )
    from store.services.instances import instance_create_many

    serializer = InstanceCreateSerializer(data={"instances": list(bodies)})
    serializer.is_valid(raise_exception=True)
    return instance_create_many(drafts=instance_drafts_from(serializer.validated_data),
                                limit=None)
