"""The schema's own examples work when executed, and what the schema says about request bodies
and paging is what the service does (issue 10: the modify-priorities example was refused, a
`null` pull body and an empty `sortField` were accepted against the schema)."""
import copy
import re
import uuid

import pytest
from django.utils import timezone

from store.apis.rules import SWAPPED_RULES
from store.models import Rule
from tests.helpers import SYSOP
from tests.orchestration.helpers import PULL
from tests.store.helpers import CREATE, I_CREATE, I_QUERY, I_UPDATE, MODIFY, QUERY
from tests.subscriptions.helpers import SUBSCRIBE

SCHEMA = "/api/schema/?format=json"
QUERIES = (QUERY, I_QUERY)


@pytest.fixture
def schema(api) -> dict:
    return api.get(SCHEMA).json()


def _examples(schema: dict):
    """(method, path, example name, body) of every request example in the schema."""
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            for media in operation.get("requestBody", {}).get("content", {}).values():
                for name, example in media.get("examples", {}).items():
                    yield method, path, name, example["value"]


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
def test_every_request_example_succeeds(api, schema) -> None:
    _swappable_rules()
    examples = list(_examples(schema))
    assert {(method, path) for method, path, _, _ in examples} >= {
        ("put", MODIFY), ("post", MODIFY), ("post", PULL), ("post", CREATE), ("post", QUERY),
        ("post", I_CREATE), ("post", I_QUERY), ("post", SUBSCRIBE)}
    for method, path, name, body in examples:
        response = getattr(api, method)(path, body, format="json", **SYSOP)
        assert 200 <= response.status_code < 300, (method, path, name, response.json())


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


@pytest.mark.django_db
@pytest.mark.parametrize("path, where, component", [
    (CREATE, ("entries", 0), "RuleDraftRequest"),
    (I_CREATE, (), "InstanceCreateRequest"),
    (I_CREATE, ("instances", 0), "InstanceInputRequest"),
    (SUBSCRIBE, (), "SubscribeRequest"),
    (SUBSCRIBE, ("notifyInterface",), "NotifyInterfaceRequest"),
])
@pytest.mark.parametrize("absence", ["missing", "null"])
def test_a_field_the_schema_requires_is_refused_when_missing_or_null(api, schema, path, where,
                                                                     component,
                                                                     absence) -> None:
    required = schema["components"]["schemas"][component]["required"]
    assert required
    for field in required:
        body = _example(schema, "post", path)
        if absence == "null":
            _at(body, where)[field] = None
        else:
            del _at(body, where)[field]
        response = api.post(path, body, format="json", **SYSOP)
        assert response.status_code == 400, (field, response.json())
