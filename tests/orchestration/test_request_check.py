"""The pull body's type check compiled from OrchestrationRequestSerializer (api.shapes) gives
exactly the serializer's `validated_data` whenever it accepts a body, and declines (None) the
rest, so that the serializer answers those with its own messages; a field added to a serializer
is covered by the compiled check, or the check does not compile."""
import json
from typing import Any

import hypothesis
import pytest
from django.test import override_settings
from hypothesis import given
from hypothesis import strategies as st
from rest_framework import serializers

from api.fields import BoundedListField, StrictCharField, optional_string_list
from api.shapes import ShapeNotCompiled, compile_check
from orchestration.openapi_examples import JAVA_CLIENT, PULL
from orchestration.pull.serializers import (
    MAX_SECONDS,
    OrchestrationRequestSerializer,
    ServiceRequirementSerializer,
    checked_orchestration_request,
)
from tests.request_bodies import JSON, SMALL_LIMITS, orchestration_body, plain

TYPICAL = {
    "serviceRequirement": {"serviceDefinition": "x", "operations": ["query"],
                           "interfaceTemplateNames": ["generic_http"],
                           "metadataRequirements": [{"a": 1}]},
    "orchestrationFlags": {"MATCHMAKING": True},
    "exclusivityDuration": 120,
    "qosRequirements": {"maxLatencyMs": "5"},
}


def _validated(document: Any) -> dict | None:
    """What the serializer accepts, as plain data; None when it refuses."""
    serializer = OrchestrationRequestSerializer(data=document)
    return plain(serializer.validated_data) if serializer.is_valid() else None


def _assert_same(document: Any, checked: dict | None, validated: dict | None) -> None:
    """The contract: an accepted body is one the serializer accepts, with its validated_data
    (same keys, values and key order)."""
    if checked is not None:
        assert validated is not None, document
        assert checked == validated, document
        assert json.dumps(checked) == json.dumps(validated), document


def _assert_agrees(document: Any) -> dict | None:
    checked = checked_orchestration_request(document)
    _assert_same(document, checked, _validated(document) if checked is not None else None)
    return checked


# Well typed: the right type or null everywhere, but values may still cross a limit or hold a
# refused character; then any type anywhere; then any JSON document.
_WELL_TYPED = orchestration_body(lambda right: st.one_of(right, right, right, st.none()))
_ANY_TYPE = orchestration_body(lambda right: st.one_of(right, right, st.none(), JSON))
_DOCUMENT = st.one_of(_WELL_TYPED, _WELL_TYPED, _ANY_TYPE, _ANY_TYPE, JSON)


class GeneratedBodyTests:
    @pytest.mark.parametrize("limits", [SMALL_LIMITS, {}], ids=["small limits", "defaults"])
    def test_it_gives_the_serializers_validated_data_or_declines(self, limits) -> None:
        valid = accepted = 0

        @hypothesis.settings(max_examples=2000, derandomize=True, database=None, deadline=None,
                             suppress_health_check=[hypothesis.HealthCheck.too_slow])
        @given(_DOCUMENT)
        def check(document: Any) -> None:
            nonlocal valid, accepted
            checked, validated = checked_orchestration_request(document), _validated(document)
            _assert_same(document, checked, validated)
            valid += validated is not None
            accepted += checked is not None

        with override_settings(**limits):
            check()
        # Not a check that declines everything: the serializer's accepted bodies take the fast
        # path (it declines only what JSON cannot hold, which is not generated here).
        assert valid >= 200
        assert accepted == valid


# --- examples ---

class _Requirement(ServiceRequirementSerializer):
    """The serializer with a field added."""
    zone = StrictCharField(required=True, max_length=4)
    tags = optional_string_list()


class _Request(OrchestrationRequestSerializer):
    serviceRequirement = _Requirement(required=False, allow_null=True)


class FieldTests:
    @pytest.mark.parametrize("body, accepted", [
        ({"serviceRequirement": {"zone": "b1", "tags": ["x", None]}}, True),
        ({"serviceRequirement": {"zone": ""}}, True),
        ({"serviceRequirement": {"tags": ["x"]}}, False),  # zone is required
        ({"serviceRequirement": {"zone": "b1234"}}, False),  # max_length
        ({"serviceRequirement": {"zone": None}}, False),
        ({"serviceRequirement": {"zone": 5}}, False),
        ({"serviceRequirement": {"zone": "b", "tags": "x"}}, False),
    ])
    def test_it_covers_a_field_added_to_a_serializer(self, body, accepted) -> None:
        serializer = _Request(data=body)
        assert serializer.is_valid() is accepted
        checked = compile_check(_Request)(body)
        assert checked == (plain(serializer.validated_data) if accepted else None)

    @pytest.mark.parametrize("added", [
        {"zone": serializers.CharField()},  # DRF's lenient text field: a kind not compiled
        {"zone": serializers.BooleanField()},
        {"zone": StrictCharField(validators=[lambda value: None])},
        {"zone": StrictCharField(required=False, default="x")},
        {"zone": StrictCharField(source="area")},
        {"zone": BoundedListField(child=serializers.IntegerField())},
        {"zone": StrictCharField(), "validate_zone": lambda self, value: value},
        {"validate": lambda self, attrs: attrs},
        {"to_internal_value": lambda self, data: data},
    ])
    def test_it_refuses_to_compile_what_it_does_not_understand(self, added) -> None:
        with pytest.raises(ShapeNotCompiled):
            compile_check(type("Added", (OrchestrationRequestSerializer,), added))


class AcceptedBodyTests:
    @pytest.mark.parametrize("body", [
        TYPICAL, PULL.value, JAVA_CLIENT.value, {},
        {"serviceRequirement": None, "orchestrationFlags": None, "qosRequirements": None,
         "exclusivityDuration": None},
        {"serviceRequirement": {}},
        {"serviceRequirement": {"serviceDefinition": None, "operations": None, "versions": None,
                                "alivesAt": None, "metadataRequirements": None,
                                "interfaceTemplateNames": None, "interfaceAddressTypes": None,
                                "interfacePropertyRequirements": None,
                                "securityPolicies": None, "preferredProviders": None}},
        # Blanks, null elements and zero durations pass: the service answers them.
        {"serviceRequirement": {"serviceDefinition": " ", "alivesAt": "",
                                "operations": ["", None, " query "],
                                "metadataRequirements": [None, "x", 5, [], {}]},
         "exclusivityDuration": 0},
        {"exclusivityDuration": -1},
        {"exclusivityDuration": MAX_SECONDS},
        {"orchestrationFlags": {"MATCHMAKING": "true", "x": None, "y": {"a": [1, {"b": 2.5}]}}},
        {"serviceRequirement": {"serviceDefinition": "temperatureInfo", "versions": ["1.0.0"],
                                "interfacePropertyRequirements": [{"port": {"op": "LESS_THAN",
                                                                            "value": 9000}}],
                                "securityPolicies": ["NONE"], "preferredProviders": ["P"],
                                "interfaceAddressTypes": ["IPV4"],
                                "alivesAt": "2025-11-08T12:00:00Z"}},
    ])
    def test_it_accepts_well_formed_bodies_as_the_serializer_does(self, body) -> None:
        checked = _assert_agrees(body)
        assert checked is not None
        assert checked == _validated(body)

    def test_it_drops_unknown_keys_and_leaves_absent_fields_out(self) -> None:
        body = {"serviceRequirement": {"serviceDefinition": "x", "other": 1},
                "exclusivityDuration": None, "unknown": [1]}
        assert checked_orchestration_request(body) == {
            "serviceRequirement": {"serviceDefinition": "x"}, "exclusivityDuration": None}

    def test_it_passes_free_form_json_on_as_the_serializer_does(self) -> None:
        requirement = {"a": {"op": "IN", "value": [1, 2]}}
        qos = {"maxLatencyMs": "5"}
        checked = checked_orchestration_request({
            "serviceRequirement": {"metadataRequirements": [requirement]},
            "qosRequirements": qos})
        assert checked["serviceRequirement"]["metadataRequirements"][0] is requirement
        assert checked["qosRequirements"] == qos


class DeclinedBodyTests:
    @pytest.mark.parametrize("body", [
        None, [], "x", 5, True,
        {"serviceRequirement": "x"}, {"serviceRequirement": []}, {"serviceRequirement": True},
        {"serviceRequirement": {"serviceDefinition": 5}},
        {"serviceRequirement": {"serviceDefinition": True}},
        {"serviceRequirement": {"serviceDefinition": ["x"]}},
        {"serviceRequirement": {"alivesAt": {"at": "now"}}},
        {"serviceRequirement": {"serviceDefinition": "a\x00b"}},
        {"serviceRequirement": {"serviceDefinition": "a\ud800b"}},
        {"serviceRequirement": {"operations": "query"}},
        {"serviceRequirement": {"operations": {"query": 1}}},
        {"serviceRequirement": {"versions": [1]}},
        {"serviceRequirement": {"versions": [1.5]}},
        {"serviceRequirement": {"interfaceTemplateNames": [["generic_http"]]}},
        {"serviceRequirement": {"securityPolicies": [False]}},
        {"serviceRequirement": {"preferredProviders": ["P", {}]}},
        {"serviceRequirement": {"metadataRequirements": {"a": 1}}},
        {"serviceRequirement": {"interfacePropertyRequirements": "x"}},
        {"orchestrationFlags": []}, {"orchestrationFlags": "MATCHMAKING"},
        {"orchestrationFlags": True}, {"qosRequirements": ["maxLatencyMs"]},
        {"exclusivityDuration": True}, {"exclusivityDuration": 5.0},
        {"exclusivityDuration": 5.5}, {"exclusivityDuration": "5"},
        {"exclusivityDuration": MAX_SECONDS + 1}, {"exclusivityDuration": []},
    ])
    def test_it_declines_what_the_serializer_refuses(self, body) -> None:
        assert checked_orchestration_request(body) is None
        assert _validated(body) is None

    @pytest.mark.parametrize("body", [
        {"orchestrationFlags": {"MATCHMAKING": (True,)}},
        {"orchestrationFlags": {1: True}},
        {"serviceRequirement": {"metadataRequirements": [{"a": 10**700}]}},
        {"exclusivityDuration": -10**700},
    ])
    def test_it_declines_what_json_cannot_hold(self, body) -> None:
        assert checked_orchestration_request(body) is None


class LimitTests:
    @pytest.fixture(autouse=True)
    def small_limits(self, settings) -> None:
        for name, value in SMALL_LIMITS.items():
            setattr(settings, name, value)

    @pytest.mark.parametrize("body, accepted", [
        ({"serviceRequirement": {"serviceDefinition": "a" * 6}}, True),
        ({"serviceRequirement": {"serviceDefinition": "a" * 7}}, False),
        ({"serviceRequirement": {"versions": ["1", "2", "3"]}}, True),
        ({"serviceRequirement": {"versions": ["1", "2", "3", "4"]}}, False),
        ({"serviceRequirement": {"versions": ["a" * 7]}}, False),
        ({"serviceRequirement": {"operations": ["a", "b"]}}, True),
        ({"serviceRequirement": {"operations": ["a", "b", "c"]}}, False),
        ({"serviceRequirement": {"metadataRequirements": [{"a": 1, "b": 2}, {"c": 3}]}}, True),
        # Conditions of all the objects together, not only the number of objects.
        ({"serviceRequirement": {"metadataRequirements": [{"a": 1, "b": 2}, {"c": 3, "d": 4}]}},
         False),
        ({"serviceRequirement": {"metadataRequirements": [{"a": {"b": {"c": 1}}}]}}, True),
        ({"serviceRequirement": {"metadataRequirements": [{"a": {"b": {"c": {}}}}]}}, False),
        ({"serviceRequirement": {"interfacePropertyRequirements": [{"a": "b" * 7}]}}, False),
        ({"orchestrationFlags": {"a": 1, "b": 2, "c": 3}}, True),
        ({"orchestrationFlags": {"a": 1, "b": 2, "c": 3, "d": 4}}, False),
        ({"orchestrationFlags": {"a" * 7: True}}, False),
        ({"qosRequirements": {"a": [[[1]]]}}, True),
        ({"qosRequirements": {"a": [[[[1]]]]}}, False),
        ({"qosRequirements": {"a": [1, 2, 3, 4]}}, False),
        ({"qosRequirements": {"a": {"b" * 7: 1}}}, False),
        ({"qosRequirements": {"a": "b" * 7}}, False),
    ])
    def test_it_honours_the_limits_of_the_settings(self, body, accepted) -> None:
        assert (checked_orchestration_request(body) is not None) is accepted
        assert (_validated(body) is not None) is accepted

    def test_it_reads_the_limits_at_each_call(self, settings) -> None:
        body = {"serviceRequirement": {"serviceDefinition": "a" * 7}}
        assert checked_orchestration_request(body) is None
        settings.MAX_STRING_LENGTH = 7
        assert _assert_agrees(body) == body
