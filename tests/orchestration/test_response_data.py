"""orchestration_response_data (orchestration/pull/serializers.py), the renderer compiled from
OrchestrationResponseSerializer (api.shapes), renders a result exactly as the serializer: the
same data, the same key order, the same bytes once rendered; a field added to a serializer is
rendered too, or the renderer does not compile."""
import datetime as dt
import json
import zoneinfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework import serializers

from api.json_media import JSONRenderer
from api.shapes import ShapeNotCompiled, compile_renderer
from orchestration.pull.serializers import orchestration_response_data
from orchestration.pull.serializers import (
    InterfaceResultSerializer,
    OrchestrationResponseSerializer,
    OrchestrationResultEntrySerializer,
)
from orchestration.pull.types import OrchestrationResult, OrchestrationResultEntry

UTC = dt.timezone.utc
NOON = dt.datetime(2025, 11, 8, 12, tzinfo=UTC)


def _rendered(data) -> bytes:
    return JSONRenderer().render(data)


def _serialized(result: OrchestrationResult):
    return OrchestrationResponseSerializer(result).data


def _plain(value):
    """Serializer output (ReturnDict, OrderedDict) as plain dicts and lists, for ==."""
    return json.loads(json.dumps(value))


def _entry(**kwargs) -> OrchestrationResultEntry:
    values = {"service_instance_id": "TemperatureProvider|temperatureInfo|1.0.0",
              "provider": "TemperatureProvider", "service_definition": "temperatureInfo",
              "version": "1.0.0"}
    return OrchestrationResultEntry(**{**values, **kwargs})


def _one(entry: OrchestrationResultEntry) -> dict:
    return orchestration_response_data(OrchestrationResult([entry], []))["results"][0]


# --- generated results ----------------------------------------------------------------------

# Any Unicode; a lone surrogate now and then (the renderer replaces it, api.json_media).
TEXT = st.one_of(st.text(max_size=12), st.sampled_from(["\u00e9t\u00e9 \u6e29 \U0001f321",
                                                         "a\ud800b"]))
# Aware UTC datetimes, whole seconds or with microseconds, across the whole range of years.
WHOLE = st.datetimes(timezones=st.just(UTC)).map(lambda value: value.replace(microsecond=0))
INSTANT = st.one_of(WHOLE, st.datetimes(timezones=st.just(UTC)))
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False,
                                                          allow_infinity=False) | TEXT,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(TEXT, children,
                                                                      max_size=3),
    max_leaves=10)
METADATA = st.one_of(st.none(), st.just({}), st.dictionaries(TEXT, JSON, max_size=4))
INTERFACE = st.fixed_dictionaries({
    "templateName": TEXT, "protocol": TEXT, "policy": TEXT,
    "properties": st.one_of(st.none(), st.just({}), st.dictionaries(TEXT, JSON, max_size=4)),
})
INTERFACES = st.one_of(st.none(), st.just([]), st.lists(INTERFACE, max_size=4))
# A token as our own issuer gives it (expiresAt a datetime or None, usageLimit maybe absent)
# or as ConsumerAuthorization's is passed on (expiresAt the CA's string, maybe absent).
TOKEN = st.fixed_dictionaries(
    {"tokenType": TEXT, "targetType": TEXT, "token": TEXT},
    optional={"expiresAt": st.one_of(st.none(), INSTANT,
                                     st.just("2025-11-08T12:00:00.5Z")),
              "usageLimit": st.one_of(st.none(), st.integers(min_value=0, max_value=2**40))})
TOKENS = st.one_of(st.none(), st.just({}), st.dictionaries(
    TEXT, st.dictionaries(TEXT, TOKEN, max_size=3), max_size=3))
ENTRY = st.builds(
    OrchestrationResultEntry,
    service_instance_id=TEXT, provider=TEXT, service_definition=TEXT, version=TEXT,
    alive_until=st.none() | INSTANT, exclusive_until=st.none() | INSTANT,
    metadata=METADATA, interfaces=INTERFACES, authorization_tokens=TOKENS)
RESULT = st.builds(OrchestrationResult, results=st.lists(ENTRY, max_size=5),
                   warnings=st.lists(TEXT, max_size=4))


class GeneratedResultTests:
    @settings(max_examples=400, deadline=None, database=None)
    @given(RESULT)
    def test_it_renders_the_bytes_the_serializer_renders(self, result):
        data = orchestration_response_data(result)
        serialized = _serialized(result)
        assert _rendered(data) == _rendered(serialized)
        assert data == serialized
        assert data == _plain(serialized)


# --- examples -------------------------------------------------------------------------------

class AbsentValueTests:
    def test_it_leaves_out_the_absent_values_of_an_entry(self):
        assert _one(_entry()) == {
            "serviceInstanceId": "TemperatureProvider|temperatureInfo|1.0.0",
            "cloudIdentitifer": "LOCAL", "providerName": "TemperatureProvider",
            "serviceDefinitition": "temperatureInfo", "version": "1.0.0"}

    def test_it_keeps_empty_metadata_interfaces_and_tokens(self):
        data = _one(_entry(metadata={}, interfaces=[], authorization_tokens={}))
        assert (data["metadata"], data["interfaces"], data["authorizationTokens"]) == ({}, [], {})

    def test_it_leaves_out_token_keys_that_are_not_there(self):
        token = {"tokenType": "TIME_LIMITED_TOKEN", "targetType": "SERVICE_DEF", "token": "t"}
        data = _one(_entry(authorization_tokens={"TIME_LIMITED_TOKEN_AUTH": {"op": token}}))
        assert list(data["authorizationTokens"]["TIME_LIMITED_TOKEN_AUTH"]["op"]) == [
            "tokenType", "targetType", "token"]

    def test_it_keeps_the_null_token_values_the_serializer_keeps(self):
        token = {"usageLimit": None, "expiresAt": None, "token": "t",
                 "targetType": "SERVICE_DEF", "tokenType": "USAGE_LIMITED_TOKEN"}
        result = OrchestrationResult([_entry(authorization_tokens={"P": {"op": token}})], [])
        rendered = _rendered(orchestration_response_data(result))
        assert b'"op":{"tokenType":"USAGE_LIMITED_TOKEN","targetType":"SERVICE_DEF",' \
               b'"token":"t","expiresAt":null,"usageLimit":null}' in rendered
        assert rendered == _rendered(_serialized(result))


class WireNameTests:
    def test_it_uses_the_misspelled_wire_names_in_the_serializer_order(self):
        data = _one(_entry(alive_until=NOON, exclusive_until=NOON, metadata={"a": 1},
                           interfaces=[], authorization_tokens={}))
        assert list(data) == [
            "serviceInstanceId", "cloudIdentitifer", "providerName", "serviceDefinitition",
            "version", "aliveUntil", "exclusiveUntil", "metadata", "interfaces",
            "authorizationTokens"]

    def test_it_gives_the_local_cloud(self):
        assert _one(_entry())["cloudIdentitifer"] == "LOCAL"

    def test_it_gives_results_then_warnings(self):
        result = OrchestrationResult([], ["auto_matchmaking"])
        assert _rendered(orchestration_response_data(result)) == (
            b'{"results":[],"warnings":["auto_matchmaking"]}\n')


class DateTimeTests:
    def test_it_gives_whole_seconds_without_a_fraction(self):
        assert _one(_entry(alive_until=NOON))["aliveUntil"] == "2025-11-08T12:00:00Z"

    def test_it_gives_microseconds(self):
        data = _one(_entry(exclusive_until=NOON.replace(microsecond=120000)))
        assert data["exclusiveUntil"] == "2025-11-08T12:00:00.120000Z"

    def test_it_gives_other_zones_in_utc(self):
        cet = zoneinfo.ZoneInfo("Europe/Budapest")
        entry = _entry(alive_until=dt.datetime(2025, 11, 8, 13, 0, 0, 5, tzinfo=cet))
        assert _one(entry)["aliveUntil"] == "2025-11-08T12:00:00.000005Z"
        assert _one(entry) == _serialized(OrchestrationResult([entry], []))["results"][0]

    def test_it_reads_naive_datetimes_as_utc_as_the_serializer_does(self):
        entry = _entry(alive_until=dt.datetime(2025, 11, 8, 12, 0, 1))
        assert _one(entry)["aliveUntil"] == "2025-11-08T12:00:01Z"
        assert _one(entry) == _serialized(OrchestrationResult([entry], []))["results"][0]

    def test_it_passes_on_a_token_expiry_given_as_text(self):
        token = {"tokenType": "T", "targetType": "SERVICE_DEF", "token": "t",
                 "expiresAt": "2025-11-08T12:00:00.5Z"}
        entry = _entry(authorization_tokens={"P": {"op": token}})
        assert _one(entry)["authorizationTokens"]["P"]["op"]["expiresAt"] == (
            "2025-11-08T12:00:00.5Z")
        assert _one(entry) == _serialized(OrchestrationResult([entry], []))["results"][0]


class _Interface(InterfaceResultSerializer):
    """The serializers with fields added."""
    port = serializers.IntegerField(required=False)
    note = serializers.CharField(allow_null=True)


class _Entry(OrchestrationResultEntrySerializer):
    interfaces = _Interface(many=True, required=False)
    zones = serializers.ListField(child=serializers.DateTimeField(), source="metadata",
                                  required=False)


class _Response(OrchestrationResponseSerializer):
    results = _Entry(many=True)


class AddedFieldTests:
    @pytest.mark.parametrize("interface", [
        {"templateName": "t", "protocol": "p", "policy": "NONE", "properties": {}, "port": 80},
        {"templateName": "t", "protocol": "p", "policy": "NONE", "properties": {}, "note": 5},
    ])
    def test_it_renders_a_field_added_to_a_serializer(self, interface):
        result = OrchestrationResult([_entry(interfaces=[interface], metadata=[NOON, None])],
                                     ["w"])
        data = compile_renderer(_Response)(result)
        assert _rendered(data) == _rendered(_Response(result).data)
        assert data == _Response(result).data

    @pytest.mark.parametrize("added", [
        {"zone": serializers.ChoiceField(choices=["a"])},  # a kind not compiled
        {"zone": serializers.CharField(default="x")},
        {"zone": serializers.CharField(source="a.b")},
        {"zone": serializers.DateTimeField(format="%Y")},
        {"to_representation": lambda self, instance: {}},
    ])
    def test_it_refuses_to_compile_what_it_does_not_understand(self, added):
        added_entry = type("Added", (OrchestrationResultEntrySerializer,), added)
        response = type("Response", (OrchestrationResponseSerializer,),
                        {"results": added_entry(many=True)})
        with pytest.raises(ShapeNotCompiled):
            compile_renderer(response)
