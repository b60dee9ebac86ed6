"""OpenAPI pieces shared by every endpoint."""
import re
from collections.abc import Callable

from django.conf import settings
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers

from api.operations import is_served, served_operation

_MEANINGS = {
    400: "Invalid request, including NUL characters, lone surrogates or non-finite numbers "
         "anywhere in it (INVALID_PARAMETER)",
    401: "No or invalid identity (AUTH)",
    403: "No permission (FORBIDDEN)",
    406: "The Accept header allows no JSON answer (INVALID_PARAMETER)",
    415: "The body is not JSON (INVALID_PARAMETER)",
    423: "A concurrent writer held the data through every retry (DATABASE_CONFLICT_RETRIES); "
         "nothing was written, send it again (LOCKED)",
    500: "Unexpected error (INTERNAL_SERVER_ERROR)",
    503: "A system this one depends on failed (EXTERNAL_SERVER_ERROR)",
}


class ErrorResponseSerializer(serializers.Serializer):
    errorMessage = serializers.CharField()
    errorCode = serializers.IntegerField(help_text="Equals the HTTP status.")
    exceptionType = serializers.ChoiceField(choices=[
        "ARROWHEAD", "INVALID_PARAMETER", "AUTH", "FORBIDDEN", "DATA_NOT_FOUND", "LOCKED",
        "INTERNAL_SERVER_ERROR", "EXTERNAL_SERVER_ERROR",
    ])
    origin = serializers.CharField(help_text='"<METHOD> <path>"')

    class Meta:
        ref_name = "ErrorResponse"


def error_responses(*statuses: int, body: bool = False) -> dict[int, OpenApiResponse]:
    """The error answers of an operation: always 400, 401, 406 and 500, plus the given ones;
    for an operation that reads a `body` also 415. The 400 includes the input gate's refusals
    (NUL characters, lone surrogates, non-finite numbers: api.input_safety). The refusals
    made before any view, for every operation alike (413, 414, 431), are added by the hook
    `postprocess_server_limits`."""
    codes = sorted({400, 401, 406, 500, *statuses, *((415,) if body else ())})
    return {code: OpenApiResponse(ErrorResponseSerializer, description=_MEANINGS[code])
            for code in codes}


# `extensions` keys of an operation, read (and removed) by `postprocess_bodies`.
NULL_BODY_IS_ABSENT = "x-null-body-is-absent"
BODY_REQUIRED = "x-body-required"


def null_body_is_absent() -> dict[str, bool]:
    """`extend_schema(extensions=...)` of an operation whose body is optional and whose JSON
    `null` body is the same as no body (SPEC §5 pull: "absent = empty request"; the reference's
    optional `@RequestBody` reads `null` as absent too)."""
    return {NULL_BODY_IS_ABSENT: True}


def body_required() -> dict[str, bool]:
    """`extend_schema(extensions=...)` of an operation for which no body (or `null`) is a 400
    (an empty create, a subscription without notify interface)."""
    return {BODY_REQUIRED: True}


REQUIRED_NOT_NULL = "x-required-not-null"


def required_not_null(*fields: str) -> dict[str, list[str]]:
    """`extend_schema_serializer(extensions=...)` of a request serializer whose `fields` the
    service refuses when absent or null (and, for a list, when empty or holding null), with the
    reference's messages. The DRF fields stay optional so that those messages are given."""
    return {REQUIRED_NOT_NULL: list(fields)}


def _require(schema: dict) -> None:
    fields = schema.pop(REQUIRED_NOT_NULL, None)
    if not fields:
        return
    schema["required"] = sorted({*schema.get("required", ()), *fields})
    for name in fields:
        prop = schema["properties"][name]
        prop.pop("nullable", None)
        if prop.get("type") == "array":
            prop["minItems"] = max(prop.get("minItems", 0), 1)
            prop["items"].pop("nullable", None)


# Marks a string schema (given with `extend_schema_field`) whose blank value the service
# refuses although the DRF field lets it through to the service for the reference's message.
BLANK_REFUSED = "x-blank-refused"
_BLANK = {"type": "string", "maxLength": 0}


# Marks a field schema built when the schema is generated, from the configuration in force
# then (a field refused under the current settings); `postprocess_bodies` builds it.
RUNTIME_SCHEMA = "x-runtime-schema"
_RUNTIME_SCHEMAS: dict[str, Callable[[], dict]] = {}


def runtime_schema(name: str, build: Callable[[], dict]) -> dict[str, str]:
    """The schema of a field (for `api.fields.documented`) that `build()` gives at each
    generation of the schema: what the field accepts depends on settings that tests and
    deployments change (e.g. QOS_ENABLED). What drf-spectacular adds from the field itself
    (description, nullable) is kept."""
    _RUNTIME_SCHEMAS[name] = build
    return {RUNTIME_SCHEMA: name}


def _rewritten(node):
    """`node` with drf-spectacular's blank alternative removed where the string schema is
    marked BLANK_REFUSED (for a field that allows blanks and has a pattern it writes
    `oneOf: [<schema>, {"type": "string", "maxLength": 0}]`, which would make `""` valid), and
    every RUNTIME_SCHEMA marker replaced by the schema built now."""
    if isinstance(node, list):
        return [_rewritten(item) for item in node]
    if not isinstance(node, dict):
        return node
    alternatives = node.get("oneOf")
    if (isinstance(alternatives, list) and len(alternatives) == 2 and alternatives[1] == _BLANK
            and isinstance(alternatives[0], dict) and alternatives[0].get(BLANK_REFUSED)):
        node = {**alternatives[0], **{k: v for k, v in node.items() if k != "oneOf"}}
    node = {key: _rewritten(value) for key, value in node.items() if key != BLANK_REFUSED}
    name = node.pop(RUNTIME_SCHEMA, None)
    return node if name is None else {**_RUNTIME_SCHEMAS[name](), **node}


def _nullable(media: dict) -> None:
    schema = media.get("schema")
    if schema is not None:
        media["schema"] = {"allOf": [schema], "nullable": True,
                           "description": "`null` or no body at all: the empty request."}


def postprocess_bodies(result: dict, generator, request, public) -> dict:
    """drf-spectacular hook for what serializers cannot say about a whole body: a body marked
    with `null_body_is_absent()` also accepts `null` (OpenAPI 3.0 has no nullable reference,
    hence the `allOf` wrapper); one marked with `body_required()` is required. Request
    components marked with `required_not_null()` get their required fields; strings marked
    BLANK_REFUSED lose the blank alternative; RUNTIME_SCHEMA markers are built."""
    result = _rewritten(result)
    for schema in result.get("components", {}).get("schemas", {}).values():
        _require(schema)
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            body = operation.get("requestBody", {})
            if operation.pop(NULL_BODY_IS_ABSENT, False):
                for media in body.get("content", {}).values():
                    _nullable(media)
            if operation.pop(BODY_REQUIRED, False):
                body["required"] = True
    return result


def _server_limit_meanings() -> dict[str, str]:
    """The refusals of every operation that come before any view, with the limits of the
    running configuration (docs/limits.md, docs/errors.md)."""
    return {
        "413": f"The body, or the Content-Length the request declares (also on an operation "
               f"without body), is larger than MAX_REQUEST_BODY_BYTES "
               f"({settings.MAX_REQUEST_BODY_BYTES} bytes); refused before it is read "
               f"(api.request_guard; INVALID_PARAMETER)",
        "414": f"The request line (method, path with its query string, HTTP version) is longer "
               f"than SERVER_LIMIT_REQUEST_LINE ({settings.SERVER_LIMIT_REQUEST_LINE} bytes); "
               f"answered by the HTTP server, `origin` `HTTP` (INVALID_PARAMETER)",
        "431": f"More header fields than SERVER_LIMIT_REQUEST_FIELDS "
               f"({settings.SERVER_LIMIT_REQUEST_FIELDS}) or one longer than "
               f"SERVER_LIMIT_REQUEST_FIELD_SIZE ({settings.SERVER_LIMIT_REQUEST_FIELD_SIZE} "
               f"bytes); answered by the HTTP server, `origin` `HTTP` (INVALID_PARAMETER)",
        "503": "The database is unavailable; retry (EXTERNAL_SERVER_ERROR)",
    }


ERROR_RESPONSE_REF = "#/components/schemas/ErrorResponse"


def postprocess_server_limits(result: dict, generator, request, public) -> dict:
    """drf-spectacular hook: every operation documents the refusals that the HTTP server
    (nginx, config/front.py) and the request guard (api.request_guard) make before any view,
    whatever the operation: 413, 414 and 431, and 503 (the database away), in the error
    envelope; an operation's own meaning of a status is kept in front. One place, so that no
    operation can lack them."""
    meanings = _server_limit_meanings()
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            for status, meaning in meanings.items():
                own = responses.get(status, {}).get("description")
                responses[status] = {
                    "content": {"application/json": {"schema": {"$ref": ERROR_RESPONSE_REF}}},
                    "description": f"{own}; or: {meaning}" if own else meaning}
            operation["responses"] = dict(sorted(responses.items()))
    return result


def served_endpoints(endpoints: list[tuple]) -> list[tuple]:
    """drf-spectacular preprocessing hook: the operations this service serves, once. Left out:
    those of the other orchestration strategy's store (answered like unknown paths,
    api.strategy_gate), and the paths served only for the Java common library's way of
    passing path parameters (`…/unsubscribe/{id}/<id>`, subscriptions/urls.py), which are the
    documented operations again."""
    return [(path, regex, method, callback) for path, regex, method, callback in endpoints
            if not _JAVA_CLIENT_PATH.search(path) and _served(callback, method)]


_JAVA_CLIENT_PATH = re.compile(r"/\{(id|owner)\}/")


def _served(callback, method: str) -> bool:
    operation = served_operation(callback.cls, method)
    return operation is None or is_served(operation)
