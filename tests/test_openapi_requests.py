"""Requests the service refuses are outside the schema (issue 10 item 10): an independent
schemathesis run found requests the schema called valid and the service answered 400 (blank
list elements, blank ids, an instance without interfaces, `page` without `size`, a target system
name that is no name). Each is checked twice here: the service refuses it with the reference's
message, and the schema does not accept it."""
import copy
from typing import Any

import jsonschema
import pytest

from tests.helpers import SYSOP
from tests.orchestration.helpers import PULL
from tests.store.helpers import I_CREATE, I_QUERY, I_REMOVE, I_UPDATE, QUERY
from tests.subscriptions.helpers import (
    PUSH_QUERY,
    PUSH_TRIGGER,
    SUBSCRIBE,
    SUBSCRIPTION_QUERY,
    mqtt_notify,
)

SCHEMA = "/api/schema/?format=json"
HISTORY = "/serviceorchestration/orchestration/mgmt/history/query"
A_UUID = "0b7e4f5e-1c2d-4e3f-8a9b-0c1d2e3f4a5b"
INSTANCE = {"serviceDefinitionName": "temperatureInfo", "systemName": "TemperatureProvider",
            "interfaces": [{"templateName": "generic_http", "protocol": "http", "policy": "NONE",
                            "properties": {"accessAddresses": ["127.0.0.1"], "accessPort": 8080,
                                           "basePath": "/t"}}]}


@pytest.fixture
def schema(api) -> dict:
    return api.get(SCHEMA).json()


def _json_schema(node: Any, components: dict) -> Any:
    """An OpenAPI 3.0 schema as JSON Schema: references inlined, `nullable` as a null type."""
    if isinstance(node, list):
        return [_json_schema(item, components) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return _json_schema(components[node["$ref"].rsplit("/", 1)[-1]], components)
    result = {key: _json_schema(value, components) for key, value in node.items()
              if key != "nullable"}
    if node.get("nullable"):
        result = {"anyOf": [result, {"type": "null"}]}
    return result


def _accepts(schema: dict, fragment: dict, value: Any) -> bool:
    validator = jsonschema.Draft4Validator(_json_schema(fragment, schema["components"]["schemas"]))
    return validator.is_valid(value)


def _body_schema(schema: dict, method: str, path: str) -> dict:
    return schema["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]


def _with(base: dict, **changes: Any) -> dict:
    body = copy.deepcopy(base)
    body.update(changes)
    return body


REFUSED_BODIES = [
    pytest.param("post", I_CREATE, {"instances": [{"serviceDefinitionName": "a",
                                                   "systemName": "A"}]},
                 "Service interface list is empty", id="instance-without-interfaces"),
    pytest.param("post", I_CREATE, {"instances": [_with(INSTANCE, interfaces=[])]},
                 "Service interface list is empty", id="instance-with-empty-interfaces"),
    pytest.param("post", I_CREATE, {"instances": [_with(INSTANCE, interfaces=None)]},
                 "Service interface list is empty", id="instance-with-null-interfaces"),
    pytest.param("put", I_UPDATE, {"instances": [{"instanceId": "", "interfaces":
                                                  INSTANCE["interfaces"]}]},
                 "Instance id is empty", id="update-with-empty-instance-id"),
    pytest.param("put", I_UPDATE, {"instances": [{"instanceId": " \u3000 ", "interfaces":
                                                  INSTANCE["interfaces"]}]},
                 "Instance id is empty", id="update-with-blank-instance-id"),
    pytest.param("post", I_QUERY, {"pagination": {"page": 0, "size": None, "direction": "",
                                                  "sortField": ""}},
                 "If page parameter is defined then size parameter cannot be undefined",
                 id="page-without-size"),
    pytest.param("post", QUERY, {"pagination": {"size": 3}},
                 "If size parameter is defined then page parameter cannot be undefined",
                 id="size-without-page"),
    pytest.param("post", QUERY, {"serviceInstanceIds": [""]},
                 "Service instance id list contains null or empty element",
                 id="blank-list-element"),
    pytest.param("post", I_QUERY, {"instanceIds": [" "]},
                 "contains null or empty element", id="blank-instance-id-element"),
    pytest.param("post", SUBSCRIBE, {"notifyInterface": mqtt_notify(), "orchestrationRequest": {
                     "serviceRequirement": {"serviceDefinition": "temperatureInfo",
                                            "securityPolicies": [""]}}},
                 "Security policy list contains empty element", id="blank-security-policy"),
    pytest.param("post", SUBSCRIBE, {"notifyInterface": mqtt_notify(),
                                     "targetSystemName": "0" * 70},
                 "naming convention", id="target-system-name-that-is-no-name"),
    # Issue 29 item 5: ids that are no UUIDs, names in filter lists, enumerations, QoS while it
    # is disabled, an update's instance id that is no instance id.
    pytest.param("post", QUERY, {"ids": ["0" * 32]}, "Invalid UUID: " + "0" * 32,
                 id="rule-id-that-is-no-uuid"),
    pytest.param("post", HISTORY, {"ids": [A_UUID[:-1]]}, "Invalid UUID id",
                 id="job-id-that-is-no-uuid"),
    pytest.param("post", HISTORY, {"subscriptionIds": ["{" + A_UUID + "}"]}, "Invalid UUID id",
                 id="subscription-id-that-is-no-uuid"),
    pytest.param("post", PUSH_TRIGGER, {"subscriptionIds": ["urn:uuid:" + A_UUID]},
                 "Invalid UUID id", id="trigger-subscription-id-that-is-no-uuid"),
    pytest.param("post", HISTORY, {"requesterSystems": ["0abc"]}, "naming convention",
                 id="requester-system-that-is-no-name"),
    pytest.param("post", PUSH_QUERY, {"targetSystems": ["a.b"]}, "naming convention",
                 id="push-target-system-that-is-no-name"),
    pytest.param("post", SUBSCRIPTION_QUERY, {"ownerSystems": ["a" * 64]}, "naming convention",
                 id="owner-system-that-is-no-name"),
    pytest.param("post", HISTORY, {"statuses": ["FINISHED"]}, "Invalid status: FINISHED",
                 id="job-status-that-is-none"),
    pytest.param("post", HISTORY, {"type": " "}, "Invalid type: ", id="blank-job-type"),
    pytest.param("post", SUBSCRIBE, {"notifyInterface": mqtt_notify(),
                                     "targetSystemName": "\x12\n"},
                 "naming convention: null", id="target-blank-only-to-java"),
    pytest.param("post", PULL, {"qosRequirements": {"maxLatencyMs": 5}},
                 "QoS support is disabled", id="qos-while-disabled"),
    pytest.param("post", SUBSCRIBE, {"notifyInterface": {**mqtt_notify(), "protocol": "XMPP"}},
                 "Unsupported notify protocol: XMPP", id="notify-protocol-that-is-none"),
    pytest.param("post", SUBSCRIBE, {"notifyInterface": {**mqtt_notify(), "protocol": "\u3000"}},
                 "Notify protocol is missing", id="blank-notify-protocol"),
    pytest.param("put", I_UPDATE, {"instances": [{"instanceId": "0", "interfaces":
                                                  INSTANCE["interfaces"]}]},
                 "does not match the naming convention: 0", id="update-with-no-instance-id"),
]


@pytest.mark.django_db
@pytest.mark.parametrize("method, path, body, message", REFUSED_BODIES)
def test_a_body_the_service_refuses_is_outside_the_schema(api, schema, method, path, body,
                                                         message) -> None:
    response = getattr(api, method)(path, body, format="json", **SYSOP)
    assert response.status_code == 400, response.json()
    assert message in response.json()["errorMessage"]
    assert not _accepts(schema, _body_schema(schema, method, path), body)


@pytest.mark.django_db
@pytest.mark.parametrize("ids", [["", ""], [" ", ","]])
def test_instance_remove_without_ids_is_outside_the_schema(api, schema, ids) -> None:
    response = api.delete(I_REMOVE + "?" + "&".join(f"ids={value}" for value in ids), **SYSOP)
    assert response.status_code == 400, response.json()
    assert response.json()["errorMessage"] == "Instance id list is empty"
    parameter = next(parameter for parameter in schema["paths"][I_REMOVE]["delete"]["parameters"]
                     if parameter["name"] == "ids")
    assert not _accepts(schema, parameter["schema"], ids)


@pytest.mark.django_db
@pytest.mark.parametrize("method, path, body", [
    ("post", I_CREATE, {"instances": [INSTANCE]}),
    ("post", QUERY, {"pagination": {"page": 0, "size": 2, "direction": " desc ",
                                    "sortField": ""}}),
    ("post", QUERY, {"pagination": {"page": None, "size": None, "sortField": "priority"}}),
    ("post", I_QUERY, {"pagination": {}, "instanceIds": ["\u3000A|b|1"]}),
    ("post", SUBSCRIBE, {"notifyInterface": mqtt_notify(), "targetSystemName": " "}),
    ("post", QUERY, {"ids": [f" {A_UUID.upper()}\t"]}),
    ("post", HISTORY, {"ids": [A_UUID], "subscriptionIds": [A_UUID], "statuses": [" done\t"],
                       "type": "push", "requesterSystems": ["temperature-consumer"]}),
    ("post", PUSH_TRIGGER, {"subscriptionIds": [A_UUID]}),
    ("post", PULL, {"qosRequirements": {}}),
    ("post", SUBSCRIBE, {"notifyInterface": {**mqtt_notify(), "protocol": "\u3000mqtt "}}),
])
def test_what_the_schema_now_refuses_excludes_nothing_the_service_accepts(api, schema, method,
                                                                        path, body) -> None:
    """The tightened parts still accept what the service accepts (both page and size or
    neither; a blank target; names only blank by Python's definition)."""
    response = getattr(api, method)(path, body, format="json", **SYSOP)
    assert 200 <= response.status_code < 300, response.json()
    assert _accepts(schema, _body_schema(schema, method, path), body)


QOS_REQUIREMENTS = [({"maxLatencyMs": 5}, True), ({"maxLatencyMs": " 007\u3000"}, True),
                    ({"maxLatencyMs": 10 ** 18 - 1}, True), ({"maxLatencyMs": 10 ** 18}, False),
                    ({"maxLatencyMs": 0}, False), ({"maxLatencyMs": "0" * 18}, False),
                    ({"maxLatencyMs": "1" * 19}, False), ({"maxLatencyMs": "-1"}, False),
                    ({"maxLatencyMs": "\u0663"}, False), ({"maxLatencyMs": True}, False),
                    ({"minLatencyMs": 5}, False), ({}, True)]


@pytest.mark.django_db
@pytest.mark.parametrize("requirements, accepted", QOS_REQUIREMENTS)
def test_the_schema_of_qos_requirements_follows_qos_enabled(api, settings, requirements,
                                                            accepted) -> None:
    """Generated at each request from QOS_ENABLED: with QoS on, exactly the latencies the
    service takes; with QoS off, no requirement at all (the campaign's "QoS disabled" 400s)."""
    settings.QOS_ENABLED = True
    schema = api.get(SCHEMA).json()
    response = api.post(PULL, {"qosRequirements": requirements}, format="json", **SYSOP)
    assert (response.status_code == 200) == accepted, response.json()
    assert _accepts(schema, _body_schema(schema, "post", PULL), {"qosRequirements":
                                                                  requirements}) == accepted
    settings.QOS_ENABLED = False
    schema = api.get(SCHEMA).json()
    assert _accepts(schema, _body_schema(schema, "post", PULL),
                    {"qosRequirements": requirements}) == (requirements == {})
