"""Issue 10: the hostile-input table. Every field of rule create, instance create, pull,
subscribe and the two store queries gets NUL characters, unpaired surrogates (as JSON
escapes and as raw bytes that are not UTF-8), non-finite numbers, deep nesting, wrong JSON
types, huge strings and huge lists. Never a 5xx; a 4xx writes nothing; what the service
cannot store (NUL, surrogates, invalid UTF-8, infinities, nesting past the decoder) is
always refused with the envelope.

Each test sends one kind of hostile value into every field of one request in turn and
reports every field that misbehaved, so one failure names all the gaps at once."""
import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.apps import apps
from django.db import connection
from django.test import Client, override_settings

from tests.helpers import SYSOP, as_system
from tests.orchestration.helpers import PULL
from tests.factories import make_instances, make_rules
from tests.store.helpers import CREATE, I_CREATE, I_QUERY, QUERY, http_interface, instance_body
from tests.subscriptions.helpers import SUBSCRIBE

pytestmark = pytest.mark.django_db

CONSUMER = "TemperatureConsumer"
INSTANCE = "TemperatureProvider|temperatureInfo|1.0.0"
RAW = "@@raw@@"  # replaced by raw bytes after serializing

REQUIREMENT = {
    "serviceDefinition": "temperatureInfo", "operations": ["query"], "versions": ["1.0.0"],
    "alivesAt": "2099-01-01T00:00:00Z", "metadataRequirements": [{"unit": "celsius"}],
    "interfaceTemplateNames": ["generic_http"], "interfaceAddressTypes": ["IPV4"],
    "interfacePropertyRequirements": [{"accessPort": 8080}], "securityPolicies": ["NONE"],
    "preferredProviders": ["TemperatureProvider"]}
PULL_BODY = {"serviceRequirement": REQUIREMENT,
             "orchestrationFlags": {"MATCHMAKING": True, "ONLY_PREFERRED": "false"},
             "exclusivityDuration": 10}
PAGINATION = {"page": 0, "size": 10, "direction": "ASC", "sortField": "createdAt"}

# (name, path, headers, a valid body exercising every field, statuses of that body)
REQUESTS = {
    "rule-create": (CREATE, SYSOP, {"entries": [
        {"consumer": CONSUMER, "serviceInstanceId": "OtherProvider|temperatureInfo|1.0.0",
         "priority": 2}]}),
    "instance-create": (I_CREATE, SYSOP, {"instances": [instance_body(
        "OtherProvider", expiresAt="2099-01-01T00:00:00Z",
        metadata={"unit": "celsius", "nested": {"list": [1, 2.5, True, None]}},
        interfaces=[http_interface()])]}),
    "pull": (PULL, as_system(CONSUMER), PULL_BODY),
    "subscribe": (SUBSCRIBE, as_system(CONSUMER), {
        "orchestrationRequest": PULL_BODY,
        "notifyInterface": {"protocol": "MQTT", "properties": {"topic": "plant/notify"}},
        "duration": 3600, "targetSystemName": CONSUMER}),
    "rule-query": (QUERY, SYSOP, {
        "pagination": PAGINATION, "ids": ["00000000-0000-0000-0000-000000000000"],
        "consumerNames": [CONSUMER], "serviceDefinitions": ["temperatureInfo"],
        "serviceInstanceIds": [INSTANCE], "minPriority": 1, "maxPriority": 10,
        "createdBy": "Sysop"}),
    "instance-query": (I_QUERY, SYSOP, {
        "pagination": PAGINATION, "instanceIds": [INSTANCE],
        "providerNames": ["TemperatureProvider"], "serviceDefinitionNames": ["temperatureInfo"],
        "versions": ["1.0.0"], "alivesAt": "2099-01-01T00:00:00Z",
        "metadataRequirementsList": [{"unit": "celsius"}]}),
}


def deep(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = [value]
    return value


# Values the service cannot store or echo: always refused (4xx, nothing written).
REFUSED = {
    "nul": "a\x00b",
    "nul-only": "\x00",
    "lone-high-surrogate": "\ud800",
    "lone-low-surrogate": "x\udfff",
    "raw-invalid-utf8": b'"\xff\xfe"',
    "raw-utf8-encoded-surrogate": b'"\xed\xa0\x80"',
    "raw-infinity": b"1e999",
    "raw-negative-infinity": b"-1e999",
    "raw-nan-literal": b"NaN",
    "nesting-past-the-decoder": b"[" * 20_000 + b"]" * 20_000,
}
# Values some fields accept (metadata takes any JSON): never a 5xx, a 4xx writes nothing.
TOLERATED = {
    "null": None, "true": True, "zero": 0, "negative": -1, "float": 1.5,
    "huge-int": 2**70, "max-digits-int": int("9" * 4000), "empty-string": "", "blank": "  ",
    "word": "x", "empty-list": [], "empty-object": {}, "object": {"a": 1},
    "list-of-objects": [{"a": 1}], "deep-nesting": deep(500), "huge-string": "x" * 100_000,
    "huge-list": ["x"] * 5_000, "control-characters": "a\x01\x1f\x7fb",
    "bidi-and-zero-width": "a\u202e\u200bb", "emoji": "\U0001F600",
    "uuid-shaped": "00000000-0000-0000-0000-000000000000",
}


def field_paths(document: Any, path: tuple = ()) -> Iterator[tuple]:
    """Every value's path in the document (keys and list indexes), parents first."""
    if isinstance(document, dict):
        for key, value in document.items():
            yield (*path, key)
            yield from field_paths(value, (*path, key))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            yield (*path, index)
            yield from field_paths(value, (*path, index))


def replaced(document: Any, path: tuple, value: Any) -> Any:
    copy = json.loads(json.dumps(document))
    target = copy
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return copy


def with_key(document: Any, path: tuple, key: str) -> Any:
    """The document with an extra field named `key` in the object at `path`."""
    copy = json.loads(json.dumps(document))
    target = copy
    for step in path:
        target = target[step]
    target[key] = "value"
    return copy


def encoded(document: Any, raw: bytes | None = None) -> bytes:
    """JSON as a client would send it: non-ASCII and lone surrogates as \\u escapes."""
    text = json.dumps(document).encode("ascii")
    return text if raw is None else text.replace(json.dumps(RAW).encode(), raw)


OWN_APPS = {"identity", "store", "orchestration", "subscriptions", "notifications"}


def row_counts() -> dict[str, int]:
    """Rows of every table of the service, in one round trip (the table runs thousands)."""
    tables = sorted({model._meta.db_table for model in apps.get_models(include_auto_created=True)
                     if model._meta.app_label in OWN_APPS})
    counts = ", ".join(f"(SELECT count(*) FROM {connection.ops.quote_name(t)})" for t in tables)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {counts}")
        return dict(zip(tables, cursor.fetchone(), strict=True))


@pytest.fixture
def client() -> Client:
    return Client(raise_request_exception=False)


@pytest.fixture
def catalog() -> None:
    """Something for pulls, subscriptions and queries to find, so that hostile values reach
    the matching code, not an early empty answer."""
    make_instances(instance_body(metadata={"unit": "celsius"}))
    make_rules((CONSUMER, INSTANCE, 1))


def send(client: Client, name: str, body: bytes):
    path, headers, _ = REQUESTS[name]
    return client.post(path, data=body, content_type="application/json", **headers)


def misbehaviour(client: Client, name: str, body: bytes, refused: bool,
                 status: int | None = None) -> str | None:
    """What was wrong with the answer to `body` (not `status`, when given), or None."""
    before = row_counts()  # before the request: whatever it writes shows in the difference
    response = send(client, name, body)
    after = row_counts()
    if response.status_code >= 500 or status not in (None, response.status_code):
        return f"{response.status_code} {response.content[:200]!r}"
    if response.status_code >= 400:
        error = response.json()
        if set(error) != {"errorMessage", "errorCode", "exceptionType", "origin"}:
            return f"no envelope: {error}"
        if before != after:
            return f"{response.status_code} but wrote {before} -> {after}"
    elif refused:
        return f"accepted with {response.status_code}"
    return None


class HostileInputTests:
    @pytest.mark.parametrize("name", list(REQUESTS))
    def test_the_valid_base_body_is_accepted(self, client, catalog, name):
        """Otherwise every row below would only test an early refusal."""
        response = send(client, name, encoded(REQUESTS[name][2]))
        assert response.status_code in (200, 201), response.content

    @pytest.mark.parametrize("kind", list(REFUSED) + list(TOLERATED))
    @pytest.mark.parametrize("name", list(REQUESTS))
    def test_every_field_survives_the_value(self, client, catalog, name, kind):
        refused = kind in REFUSED
        value = REFUSED[kind] if refused else TOLERATED[kind]
        raw = value if isinstance(value, bytes) else None
        document = REQUESTS[name][2]
        problems = {}
        for path in field_paths(document):
            body = replaced(document, path, RAW if raw is not None else value)
            problem = misbehaviour(client, name, encoded(body, raw), refused)
            if problem is not None:
                problems[path] = problem
        assert problems == {}

    @override_settings(MAX_REQUEST_BODY_BYTES=64 * 1024)  # the same rule, cheaper bodies
    @pytest.mark.parametrize("name", list(REQUESTS))
    def test_every_field_makes_a_body_too_large_answer_413(self, client, catalog, name):
        document = REQUESTS[name][2]
        problems = {}
        for path in field_paths(document):
            body = encoded(replaced(document, path, "x" * 64 * 1024))
            problem = misbehaviour(client, name, body, refused=True, status=413)
            if problem is not None:
                problems[path] = problem
        assert problems == {}

    @pytest.mark.parametrize("key", ["k\x00", "\ud800", "\udc00k"])
    @pytest.mark.parametrize("name", list(REQUESTS))
    def test_every_object_refuses_a_field_name_it_cannot_store(self, client, catalog, name,
                                                               key):
        document = REQUESTS[name][2]
        objects = [()] + [path for path in field_paths(document)
                          if isinstance(_at(document, path), dict)]
        problems = {}
        for path in objects:
            problem = misbehaviour(client, name, encoded(with_key(document, path, key)), True)
            if problem is not None:
                problems[path] = problem
        assert problems == {}

    @pytest.mark.parametrize("name", list(REQUESTS))
    @pytest.mark.parametrize("body", [b"", b"null", b"[]", b'"text"', b"0", b"{", b"\xff",
                                      b"{}" * 3, b'{"a":1,"a":2}', b"\x00", b'"\\u0000"'])
    def test_the_whole_body_may_be_anything(self, client, catalog, name, body):
        assert misbehaviour(client, name, body, refused=False) is None


@pytest.mark.parametrize("content_type, body", [
    ("application/json; charset=utf-16", '{"a": "\\ud800"}'.encode("utf-16")),
    ("application/json; charset=utf-16", b"\x00\xd8\x00\x00"),  # a lone surrogate unit
    ("application/json; charset=utf-16", b"\xff"),
    ("application/json; charset=latin-1", b'{"a": "\xff\x00"}'),
    ("application/json; charset=bz2_codec", b"BZh91AY&SY"),
    ("application/json; charset=rot13", b"{}"),
    ("application/json; charset=no-such-charset", b"{}"),
    ("text/plain", b"{}"),
    ("multipart/form-data; boundary=x", b"--x\r\n\r\n--x--"),
    ("application/x-www-form-urlencoded", b"a=%00"),
])
@pytest.mark.parametrize("name", ["instance-create", "subscribe"])
def test_any_content_type_and_charset_is_no_server_error(client, catalog, name, content_type,
                                                         body):
    path, headers, _ = REQUESTS[name]
    before = row_counts()
    # generic(): post() would re-encode the bytes into the declared charset first
    response = client.generic("POST", path, data=body, content_type=content_type, **headers)
    assert 400 <= response.status_code < 500, response.content
    assert row_counts() == before


def _at(document: Any, path: tuple) -> Any:
    for step in path:
        document = document[step]
    return document


class ReproductionTests:
    """The two reproductions of the issue, with the exact answers."""

    def test_a_subscription_with_nul_in_its_topic_is_refused_naming_the_field(self, client):
        body = encoded({"orchestrationRequest": {"serviceRequirement": {
            "serviceDefinition": "temperatureInfo"}}, "notifyInterface": {
            "protocol": "MQTT", "properties": {"topic": "a/\x00"}}})
        before = row_counts()
        response = send(client, "subscribe", body)
        assert response.json() == {
            "errorMessage": "notifyInterface.properties.topic: NUL characters (U+0000) are not "
                            "allowed.",
            "errorCode": 400, "exceptionType": "INVALID_PARAMETER",
            "origin": f"POST {SUBSCRIBE}"}
        assert row_counts() == before

    def test_a_pull_with_a_lone_surrogate_flag_is_refused_naming_the_field(self, client):
        response = client.post(PULL, data=b'{"orchestrationFlags":{"MATCHMAKING":"\\ud800"}}',
                               content_type="application/json", **as_system(CONSUMER))
        assert response.json() == {
            "errorMessage": "orchestrationFlags.MATCHMAKING: Unpaired surrogates (U+D800 to "
                            "U+DFFF) are not allowed.",
            "errorCode": 400, "exceptionType": "INVALID_PARAMETER", "origin": f"POST {PULL}"}
