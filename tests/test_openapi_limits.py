"""The request limits (docs/limits.md) are in the OpenAPI schema, also where a field's schema is
given whole (`config.fields.documented`), and every operation that reads a body documents the
413 of the body limit (docs/openapi.md)."""
from tests.orchestration.helpers import PULL
from tests.store.helpers import CREATE, I_CREATE, I_QUERY, MODIFY, QUERY

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


def test_every_operation_with_a_body_documents_413_and_no_other_does(api):
    with_body = set()
    for path, operations in _schema(api)["paths"].items():
        for method, operation in operations.items():
            has_body = "requestBody" in operation
            assert ("413" in operation["responses"]) == has_body, (method, path)
            # The monitor probes read no input at all: nothing of theirs can be a 400.
            assert "400" in operation["responses"] or "/monitor/" in path, (method, path)
            if has_body:
                with_body.add((method, path))
    assert {("post", PULL), ("post", CREATE), ("post", QUERY), ("put", MODIFY),
            ("post", MODIFY), ("post", I_CREATE), ("post", I_QUERY)} <= with_body
