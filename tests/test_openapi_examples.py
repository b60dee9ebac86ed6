"""The schema's own examples work when executed, and what the schema says about request bodies
and paging is what the service does (issue 10: the modify-priorities example was refused, a
`null` pull body and an empty `sortField` were accepted against the schema; issue 18: every
operation has a description, every body and required parameter an example that succeeds in
Swagger UI on a fresh database, and the request schemas mark their required fields)."""
import copy
import json
import re
import uuid
from urllib.parse import urlencode

import pytest
from django.db import transaction
from django.utils import timezone
from drf_spectacular.drainage import get_override
from drf_spectacular.generators import SchemaGenerator
from rest_framework import serializers

from api.schema import REQUIRED_NOT_NULL
from store.models import FlexibleRule, Rule
from store.openapi_examples import FLEXIBLE_RULE, SWAPPED_RULES
from subscriptions.openapi_examples import SUBSCRIPTION_ID
from tests.helpers import SYSOP
from tests.orchestration.helpers import PULL
from tests.store.helpers import CREATE, I_CREATE, I_QUERY, I_UPDATE, MODIFY, QUERY
from tests.subscriptions.helpers import PUSH_SUBSCRIBE, SUBSCRIBE

SCHEMA = "/api/schema/?format=json"
QUERIES = (QUERY, I_QUERY)
# The order in which the examples run on a fresh database, each needing only what an earlier
# one left (docs/openapi.md "Examples"); an operation not listed runs after these.
ORDER = (
    "echo", "health", "generalManagementGetConfig", "authorizationTokenVerify",
    "serviceInstanceCreate", "serviceInstanceUpdate", "serviceInstanceQuery",
    "simpleStoreCreate", "simpleStoreQuery", "flexibleStoreCreate", "flexibleStoreQuery",
    "pull", "historyQuery", "lockCreate", "lockQuery", "lockRemove",
    "simpleStoreModifyPriorities", "simpleStoreModifyPrioritiesPost",
    "subscribe", "subscriptionQuery", "unsubscribe",
    "pushSubscribe", "pushTrigger", "pushQuery", "pushUnsubscribeOne", "pushUnsubscribe",
    "generalManagementLogs",
    "simpleStoreRemove", "simpleStoreRemoveAtQuery", "simpleStoreRemoveAtStore",
    "flexibleStoreRemove",
    "serviceInstanceRemove",
)


@pytest.fixture
def schema(api) -> dict:
    return api.get(SCHEMA).json()


def _operations(schema: dict) -> list[tuple[str, str, dict]]:
    """(method, path, operation) of every operation in the schema, in ORDER."""
    operations = [(method, path, operation) for path, item in schema["paths"].items()
                  for method, operation in item.items()]
    rank = {operation_id: index for index, operation_id in enumerate(ORDER)}
    return sorted(operations, key=lambda op: (rank.get(op[2]["operationId"], len(ORDER)),
                                              op[1], op[0]))


def _first_example(node: dict):
    return next(iter(node["examples"].values()))["value"]


def _bodies(operation: dict) -> list:
    """Every body example of `operation`; no body for an operation that takes none."""
    if "requestBody" not in operation:
        return [None]
    media = operation["requestBody"]["content"]["application/json"]
    return [example["value"] for example in media.get("examples", {}).values()]


def _url(path: str, operation: dict) -> str:
    """`path` with the parameters' (first) examples: Swagger UI's prefilled values; arrays as
    repeated query parameters, as Swagger UI sends them."""
    query = {}
    for parameter in operation.get("parameters", []):
        if "examples" not in parameter:
            continue
        value = _first_example(parameter)
        if parameter["in"] == "path":
            path = path.replace("{" + parameter["name"] + "}", str(value))
        else:
            query[parameter["name"]] = value
    return f"{path}?{urlencode(query, doseq=True)}" if query else path


def _substituted(value, ids: dict[str, str]):
    """`value` with each placeholder id replaced by the id created at runtime."""
    text = json.dumps(value)
    for placeholder, created in ids.items():
        text = text.replace(placeholder, created)
    return json.loads(text)


def _created_ids(operation_id: str, response) -> dict[str, str]:
    """The ids an example created that later examples name by a placeholder."""
    if operation_id == "simpleStoreCreate":
        rules = sorted(response.json()["entries"], key=lambda rule: rule["priority"])
        return {placeholder: rule["id"] for placeholder, rule in zip(SWAPPED_RULES, rules)}
    if operation_id == "flexibleStoreCreate":
        return {FLEXIBLE_RULE: min(response.json()["entries"],
                                   key=lambda rule: rule["priority"])["id"]}
    if operation_id == "subscribe":
        return {SUBSCRIPTION_ID: response.content.decode()}
    if operation_id == "pushSubscribe":
        return {SUBSCRIPTION_ID: response.json()["entries"][0]["id"]}
    return {}


def _run_examples(api, schema: dict) -> dict[str, list]:
    """Executes every example in ORDER as the operator; the responses by operation id."""
    ids: dict[str, str] = {}
    answers: dict[str, list] = {}
    for method, path, operation in _operations(schema):
        for body in _bodies(operation):
            url = _substituted(_url(path, operation), ids)
            arguments = () if body is None else (_substituted(body, ids),)
            response = getattr(api, method)(url, *arguments, format="json", **SYSOP)
            assert 200 <= response.status_code < 300, (method, url, body, response.content)
            assert str(response.status_code) in operation["responses"], (method, url)
            answers.setdefault(operation["operationId"], []).append(response)
            ids.update(_created_ids(operation["operationId"], response))
    return answers


@pytest.mark.django_db
def test_every_example_succeeds_in_order_on_a_fresh_database(api, schema) -> None:
    answers = _run_examples(api, schema)
    assert set(answers) == {operation["operationId"] for _, _, operation in _operations(schema)}
    assert [result["providerName"] for result in answers["pull"][0].json()["results"]] == [
        "TemperatureProvider"]
    created, swapped = (
        {rule["id"]: rule["priority"] for rule in answers[operation_id][0].json()["entries"]}
        for operation_id in ("simpleStoreCreate", "simpleStoreModifyPriorities"))
    assert swapped == {rule_id: 3 - priority for rule_id, priority in created.items()}
    assert answers["unsubscribe"][0].status_code == 200  # the subscribe example's subscription
    assert answers["pushUnsubscribeOne"][0].status_code == 200
    assert answers["serviceInstanceRemove"][0].status_code == 200
    assert not Rule.objects.exists()  # the rule removes named the rules created


@pytest.mark.django_db
def test_every_example_succeeds_on_a_fresh_flexible_store(api, settings) -> None:
    """The flexible store's schema: its management instead of the simple store's, and pull's
    example finds the provider through the flexible rule example."""
    settings.ORCHESTRATION_STRATEGY = "flexible-store"
    schema = api.get(SCHEMA).json()
    operation_ids = {operation["operationId"] for _, _, operation in _operations(schema)}
    assert {"flexibleStoreCreate", "flexibleStoreQuery", "flexibleStoreRemove"} <= operation_ids
    assert not any(operation_id.startswith("simpleStore") for operation_id in operation_ids)
    answers = _run_examples(api, schema)
    assert [result["providerName"] for result in answers["pull"][0].json()["results"]] == [
        "TemperatureProvider"]
    assert list(FlexibleRule.objects.values_list("priority", flat=True)) == [2]


def test_every_operation_is_described_and_exemplified(schema) -> None:
    for method, path, operation in _operations(schema):
        assert operation.get("description"), (method, path)
        if "requestBody" in operation:
            media = operation["requestBody"]["content"]["application/json"]
            assert media.get("examples"), (method, path)
        for parameter in operation.get("parameters", []):
            if parameter.get("required"):
                assert parameter.get("examples"), (method, path, parameter["name"])


def _request_serializers() -> dict[str, serializers.Serializer]:
    """Request components by name, with the serializer each was generated from."""
    generator = SchemaGenerator()
    generator.get_schema(request=None, public=True)
    return {component.name: component.object
            for component in generator.registry._components.values()
            if component.type == "schemas" and component.name.endswith("Request")
            and isinstance(component.object, serializers.BaseSerializer)}


def test_request_schemas_list_the_fields_their_serializers_require(schema) -> None:
    """Required: what DRF requires, and what the service refuses when absent or null
    (`required_not_null`, checked against the service below); nothing else."""
    components = schema["components"]["schemas"]
    found = _request_serializers()
    assert {"InstanceInputRequest", "InterfaceInputRequest", "RuleDraftRequest",
            "SubscribeRequest", "PushSubscriptionRequest"} <= set(found)
    for name, serializer in found.items():
        required = {field.field_name for field in serializer.fields.values()
                    if field.required and not field.read_only}
        extensions = get_override(serializer, "extensions", {})
        required |= set(extensions.get(REQUIRED_NOT_NULL, ()))
        assert set(components[name].get("required", ())) == required, name
    assert components["InterfaceInputRequest"]["required"] == [
        "policy", "properties", "templateName"]


def _swappable_rules() -> None:
    """The two rules the modify-priorities example names."""
    now = timezone.now()
    for priority, rule_id in enumerate(SWAPPED_RULES, start=1):
        Rule.objects.create(id=uuid.UUID(rule_id), consumer="ExampleConsumer",
                            service_definition="temperatureInfo",
                            service_instance_id=f"Provider{priority}|temperatureInfo|1.0.0",
                            priority=priority, created_by="Sysop", updated_by="Sysop",
                            created_at=now, updated_at=now)


@pytest.mark.django_db
def test_modify_priorities_example_swaps_the_two_rules(api, schema) -> None:
    _swappable_rules()
    put = schema["paths"][MODIFY]["put"]["requestBody"]["content"]["application/json"]
    body = next(iter(put["examples"].values()))["value"]
    response = api.put(MODIFY, body, format="json", **SYSOP)
    assert response.status_code == 200, response.json()
    assert {entry["id"]: entry["priority"] for entry in response.json()["entries"]} == {
        SWAPPED_RULES[0]: 2, SWAPPED_RULES[1]: 1}


@pytest.mark.django_db
@pytest.mark.parametrize("path", [PULL, QUERY, I_QUERY])
def test_a_null_body_is_documented_and_served_as_no_body(api, schema, path) -> None:
    body = schema["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body["nullable"] is True
    response = api.post(path, "null", content_type="application/json", **SYSOP)
    assert response.status_code == 200, response.json()


@pytest.mark.django_db
@pytest.mark.parametrize("method, path", [
    ("put", MODIFY), ("post", CREATE), ("post", I_CREATE), ("put", I_UPDATE),
    ("post", SUBSCRIBE)])
def test_a_null_body_is_refused_where_the_schema_says_it_is_not_nullable(api, schema, method,
                                                                        path) -> None:
    body = schema["paths"][path][method]["requestBody"]
    assert not body["content"]["application/json"]["schema"].get("nullable")
    response = getattr(api, method)(path, "null", content_type="application/json", **SYSOP)
    assert response.status_code == 400, response.json()


@pytest.mark.django_db
@pytest.mark.parametrize("method, path", [
    ("post", CREATE), ("post", I_CREATE), ("put", I_UPDATE), ("post", SUBSCRIBE)])
def test_a_body_the_schema_requires_is_refused_when_absent(api, schema, method, path) -> None:
    assert schema["paths"][path][method]["requestBody"]["required"] is True
    response = getattr(api, method)(path, **SYSOP)
    assert response.status_code == 400, response.json()


@pytest.mark.django_db
@pytest.mark.parametrize("path", QUERIES)
@pytest.mark.parametrize("sort_field", ["", "  "])
def test_a_blank_sort_field_is_documented_and_means_the_default(api, schema, path,
                                                                sort_field) -> None:
    request = schema["paths"][path]["post"]["requestBody"]["content"]["application/json"]
    reference = request["schema"]["allOf"][0]["$ref"].rsplit("/", 1)[-1]
    paging = schema["components"]["schemas"][reference]["properties"]["pagination"]
    assert re.fullmatch(paging["properties"]["sortField"]["pattern"], sort_field)
    response = api.post(path, {"pagination": {"page": 0, "size": 1, "sortField": sort_field}},
                        format="json", **SYSOP)
    assert response.status_code == 200, response.json()


@pytest.mark.django_db
@pytest.mark.parametrize("path", QUERIES)
def test_an_unknown_sort_field_is_refused_and_outside_the_documented_pattern(api, schema,
                                                                           path) -> None:
    response = api.post(path, {"pagination": {"page": 0, "size": 1, "sortField": "nope"}},
                        format="json", **SYSOP)
    assert response.status_code == 400
    assert "Only the following are allowed" in response.json()["errorMessage"]


@pytest.mark.django_db
def test_modify_priorities_without_a_body_changes_nothing(api, schema) -> None:
    assert not schema["paths"][MODIFY]["put"]["requestBody"].get("required")
    response = api.put(MODIFY, **SYSOP)
    assert response.status_code == 200, response.json()
    assert response.json() == {"entries": [], "count": 0}


@pytest.mark.django_db
def test_every_operation_documents_the_406_it_gives_to_an_unsatisfiable_accept(api,
                                                                             schema) -> None:
    operations = [(method, path) for path, item in schema["paths"].items() for method in item]
    assert all("406" in schema["paths"][path][method]["responses"]
               for method, path in operations)
    response = api.get("/serviceorchestration/monitor/echo", HTTP_ACCEPT="text/csv")
    assert response.status_code == 406
    assert response.json()["exceptionType"] == "INVALID_PARAMETER"


def _example(schema: dict, method: str, path: str) -> dict:
    media = schema["paths"][path][method]["requestBody"]["content"]["application/json"]
    return copy.deepcopy(next(iter(media["examples"].values()))["value"])


def _at(body: dict, where: tuple) -> dict:
    """The object at the key path `where` inside `body`."""
    for key in where:
        body = body[key]
    return body


# Request components whose fields are checked against the service, with where the first
# example of (method, path) holds one.
COMPONENT_PLACES = [
    ("post", CREATE, ("entries", 0), "RuleDraftRequest"),
    ("post", I_CREATE, (), "InstanceCreateRequest"),
    ("post", I_CREATE, ("instances", 0), "InstanceInputRequest"),
    ("post", I_CREATE, ("instances", 0, "interfaces", 0), "InterfaceInputRequest"),
    ("put", I_UPDATE, (), "InstanceUpdateRequest"),
    ("put", I_UPDATE, ("instances", 0), "InstanceUpdateInputRequest"),
    ("put", I_UPDATE, ("instances", 0, "interfaces", 0), "InterfaceInputRequest"),
    ("post", SUBSCRIBE, (), "SubscribeRequest"),
    ("post", SUBSCRIBE, ("notifyInterface",), "NotifyInterfaceRequest"),
    ("post", PUSH_SUBSCRIBE, (), "PushSubscribeRequest"),
    ("post", PUSH_SUBSCRIBE, ("subscriptions", 0), "PushSubscriptionRequest"),
]


def _send_without(api, schema: dict, method: str, path: str, where: tuple, field: str,
                  absence: str):
    """The first example of the operation sent without `field` (or with it null) in the
    object at `where`, inside a savepoint that is rolled back."""
    body = _example(schema, method, path)
    if absence == "null":
        _at(body, where)[field] = None
    else:
        del _at(body, where)[field]
    with transaction.atomic():
        response = getattr(api, method)(path, body, format="json", **SYSOP)
        transaction.set_rollback(True)
    return response


def _prepare(api, schema: dict, path: str) -> None:
    """An update needs the instance the create example registers."""
    if path == I_UPDATE:
        response = api.post(I_CREATE, _example(schema, "post", I_CREATE), format="json", **SYSOP)
        assert response.status_code == 201, response.json()


@pytest.mark.django_db
@pytest.mark.parametrize("method, path, where, component", COMPONENT_PLACES)
@pytest.mark.parametrize("absence", ["missing", "null"])
def test_a_field_the_schema_requires_is_refused_when_missing_or_null(api, schema, method, path,
                                                                     where, component,
                                                                     absence) -> None:
    _prepare(api, schema, path)
    required = schema["components"]["schemas"][component]["required"]
    assert required
    for field in required:
        response = _send_without(api, schema, method, path, where, field, absence)
        assert response.status_code == 400, (field, response.json())


@pytest.mark.django_db
@pytest.mark.parametrize("method, path, where, component", [
    place for place in COMPONENT_PLACES if place[3] in {
        "InstanceInputRequest", "InterfaceInputRequest", "InstanceUpdateInputRequest",
        "SubscribeRequest", "PushSubscriptionRequest"}])
def test_a_field_the_schema_does_not_require_may_be_left_out(api, schema, method, path, where,
                                                            component) -> None:
    _prepare(api, schema, path)
    required = set(schema["components"]["schemas"][component]["required"])
    optional = set(_at(_example(schema, method, path), where)) - required
    assert optional
    for field in optional:
        response = _send_without(api, schema, method, path, where, field, "missing")
        assert 200 <= response.status_code < 300, (field, response.content)
