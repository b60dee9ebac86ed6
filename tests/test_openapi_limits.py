"""The request limits (docs/limits.md) are in the OpenAPI schema, also where a field's schema is
given whole (`api.fields.documented`), and every operation documents the refusals made before
any view: 413 (body limit), 414 and 431 (request line and header limits) (docs/openapi.md)."""
import pytest

from tests.helpers import SYSOP
from tests.orchestration.helpers import PULL
from tests.store.helpers import CREATE, I_CREATE, I_QUERY, I_REMOVE, MODIFY, QUERY

ECHO = "/serviceorchestration/monitor/echo"
GET_CONFIG = "/serviceorchestration/general/mgmt/get-config"

SCHEMA = "/api/schema/?format=json"


def _schema(api) -> dict:
    return api.get(SCHEMA).json()


def _request_properties(schema: dict, component: str) -> dict:
    return schema["components"]["schemas"][component]["properties"]


def test_bounded_lists_show_their_limit_and_their_elements_the_string_limit(api, settings):
    settings.MAX_LIST_LENGTH, settings.MAX_STRING_LENGTH, settings.MAX_BULK_SIZE = 7, 99, 11
    settings.MAX_PULL_OPERATIONS = 3
    schema = _schema(api)
    requirement = _request_properties(schema, "ServiceRequirementRequest")
    assert requirement["versions"]["maxItems"] == 7
    assert requirement["operations"]["maxItems"] == 3
    element = requirement["versions"]["items"]
    assert element["description"].startswith("Not blank")  # the documented element schema
    assert element["maxLength"] == 99
    assert "oneOf" not in element  # no blank alternative: the service refuses blank elements
    assert _request_properties(schema, "RuleQueryRequest")["ids"]["maxItems"] == 11
    assert _request_properties(schema, "InstanceQueryRequest")["instanceIds"]["maxItems"] == 11


def test_requirement_objects_and_the_paging_object_show_the_object_limit(api, settings):
    settings.MAX_LIST_LENGTH = 7
    schema = _schema(api)
    requirements = _request_properties(schema, "ServiceRequirementRequest")[
        "metadataRequirements"]
    assert requirements["maxItems"] == 7
    assert requirements["items"]["type"] == "object"
    assert requirements["items"]["maxProperties"] == 7
    for component in ("RuleQueryRequest", "InstanceQueryRequest"):
        pagination = _request_properties(schema, component)["pagination"]
        assert pagination["maxProperties"] == 7
        assert "sortField" in pagination["properties"]  # the endpoint's own paging schema


def test_bulks_show_the_bulk_limit(api, settings):
    settings.MAX_BULK_SIZE = 11
    schema = _schema(api)
    assert _request_properties(schema, "RuleCreateRequest")["entries"]["maxItems"] == 11
    assert _request_properties(schema, "RuleCreateRequest")["candidates"]["maxItems"] == 11
    assert _request_properties(schema, "InstanceCreateRequest")["instances"]["maxItems"] == 11
    priorities = schema["paths"][MODIFY]["put"]["requestBody"]["content"]["application/json"]
    assert priorities["schema"]["maxProperties"] > 0


def _operations(schema: dict):
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            yield method, path, operation


def test_every_operation_documents_the_refusals_before_any_view(api, settings):
    """413 (body or declared Content-Length over MAX_REQUEST_BODY_BYTES: the request guard
    answers it on every path), 414 (request line over SERVER_LIMIT_REQUEST_LINE) and 431
    (header limits), both answered by the HTTP server: on every operation, in the error
    envelope, with the limits of the running configuration (issue 29: 413 and 414 were
    undocumented on operations without body, ST103); and 503, the database away."""
    settings.MAX_REQUEST_BODY_BYTES, settings.SERVER_LIMIT_REQUEST_LINE = 1234, 567
    settings.SERVER_LIMIT_REQUEST_FIELDS, settings.SERVER_LIMIT_REQUEST_FIELD_SIZE = 89, 321
    operations = list(_operations(_schema(api)))
    assert len(operations) > 20
    for method, path, operation in operations:
        responses = operation["responses"]
        for status, limits in (("413", ["MAX_REQUEST_BODY_BYTES (1234 bytes)"]),
                               ("414", ["SERVER_LIMIT_REQUEST_LINE (567 bytes)"]),
                               ("431", ["SERVER_LIMIT_REQUEST_FIELDS (89)",
                                        "SERVER_LIMIT_REQUEST_FIELD_SIZE (321 bytes)"]),
                               # After the operation's own 503 where it has one (a system it
                               # depends on).
                               ("503", ["database is unavailable"])):
            assert status in responses, (method, path, status)
            content = responses[status]["content"]["application/json"]["schema"]
            assert content == {"$ref": "#/components/schemas/ErrorResponse"}, (method, path)
            assert all(limit in responses[status]["description"] for limit in limits)


def test_every_operation_with_a_body_documents_415_and_no_other_does(api):
    with_body = set()
    for method, path, operation in _operations(_schema(api)):
        has_body = "requestBody" in operation
        assert ("415" in operation["responses"]) == has_body, (method, path)
        # The monitor probes read no input at all: nothing of theirs can be a 400.
        assert "400" in operation["responses"] or "/monitor/" in path, (method, path)
        if has_body:
            with_body.add((method, path))
    assert {("post", PULL), ("post", CREATE), ("post", QUERY), ("put", MODIFY),
            ("post", MODIFY), ("post", I_CREATE), ("post", I_QUERY)} <= with_body


@pytest.mark.django_db
@pytest.mark.parametrize("path", [ECHO, GET_CONFIG, I_REMOVE + "?ids=A|b|1"])
def test_an_operation_without_body_answers_the_documented_413(api, settings, path):
    """A request without body that declares a Content-Length over the limit is refused before
    any view, with the envelope the schema documents for it."""
    settings.MAX_REQUEST_BODY_BYTES = 100
    method = "delete" if path.startswith(I_REMOVE) else "get"
    response = getattr(api, method)(path, CONTENT_LENGTH="101", **SYSOP)
    assert response.status_code == 413
    assert response.json()["exceptionType"] == "INVALID_PARAMETER"
    documented = _schema(api)["paths"][path.split("?")[0]][method]["responses"]
    assert "413" in documented
