"""The subscribe body's type check compiled from SubscribeSerializer (api.shapes) gives exactly
the serializer's `validated_data` whenever it accepts a body, and declines (None) the
rest, so that the serializer answers those with its own messages."""
import json
from typing import Any

import hypothesis
import pytest
from django.test import override_settings
from hypothesis import given
from hypothesis import strategies as st

from orchestration.pull.serializers import MAX_SECONDS
from subscriptions.openapi_examples import SUBSCRIBE
from subscriptions.serializers import SubscribeSerializer, checked_subscribe_request
from tests.request_bodies import (
    INT,
    JSON,
    JSON_OBJECT,
    SMALL_LIMITS,
    TEXT,
    orchestration_body,
    plain,
    some_of,
)

TYPICAL = {
    "orchestrationRequest": {"serviceRequirement": {"serviceDefinition": "temperatureInfo"},
                             "orchestrationFlags": {"MATCHMAKING": True}},
    "notifyInterface": {"protocol": "MQTT", "properties": {"topic": "plant/notify"}},
    "duration": 3600,
}


def _validated(document: Any) -> dict | None:
    serializer = SubscribeSerializer(data=document)
    return plain(serializer.validated_data) if serializer.is_valid() else None


def _assert_agrees(document: Any) -> dict | None:
    checked = checked_subscribe_request(document)
    if checked is not None:
        validated = _validated(document)
        assert validated is not None, document
        assert checked == validated, document
        assert json.dumps(checked) == json.dumps(validated), document  # key order too
    return checked


def _body(either) -> st.SearchStrategy:
    interface = some_of({"protocol": either(TEXT), "properties": either(JSON_OBJECT),
                         "topic": JSON})
    return some_of({
        "orchestrationRequest": either(orchestration_body(either)),
        "notifyInterface": either(interface),
        "duration": either(INT),
        "targetSystemName": either(TEXT),
        "extra": JSON,
    })


_WELL_TYPED = _body(lambda right: st.one_of(right, right, right, st.none()))
_ANY_TYPE = _body(lambda right: st.one_of(right, right, st.none(), JSON))
_DOCUMENT = st.one_of(_WELL_TYPED, _WELL_TYPED, _ANY_TYPE, _ANY_TYPE, JSON)


class GeneratedBodyTests:
    @pytest.mark.parametrize("limits", [SMALL_LIMITS, {}], ids=["small limits", "defaults"])
    def test_it_gives_the_serializers_validated_data_or_declines(self, limits) -> None:
        valid = accepted = 0

        @hypothesis.settings(max_examples=1500, derandomize=True, database=None, deadline=None,
                             suppress_health_check=[hypothesis.HealthCheck.too_slow])
        @given(_DOCUMENT)
        def check(document: Any) -> None:
            nonlocal valid, accepted
            checked, validated = checked_subscribe_request(document), _validated(document)
            if checked is not None:
                assert checked == validated, document
                assert json.dumps(checked) == json.dumps(validated), document
            valid += validated is not None
            accepted += checked is not None

        with override_settings(**limits):
            check()
        assert valid >= 150  # not a check that declines everything
        assert accepted == valid


class AcceptedBodyTests:
    @pytest.mark.parametrize("body", [
        TYPICAL, SUBSCRIBE.value, {},
        {"orchestrationRequest": None, "notifyInterface": None, "duration": None,
         "targetSystemName": None},
        {"notifyInterface": {}}, {"notifyInterface": {"protocol": None, "properties": None}},
        # Blanks, zero and negative durations pass: the service answers them.
        {"notifyInterface": {"protocol": " ", "properties": {"topic": ""}}, "duration": 0},
        {"duration": -5}, {"duration": MAX_SECONDS}, {"targetSystemName": "Car1"},
        {"notifyInterface": {"protocol": "HTTP", "properties": {
            "address": "127.0.0.1", "port": 8080, "method": "post", "path": "/n",
            "nested": {"a": [1, None, 2.5]}}}},
    ])
    def test_it_accepts_well_formed_bodies_as_the_serializer_does(self, body) -> None:
        assert _assert_agrees(body) == _validated(body) is not None

    def test_it_drops_unknown_keys_and_leaves_absent_fields_out(self) -> None:
        assert checked_subscribe_request({
            "notifyInterface": {"protocol": "MQTT", "other": 1}, "unknown": [1],
            "duration": None}) == {"notifyInterface": {"protocol": "MQTT"}, "duration": None}


class DeclinedBodyTests:
    @pytest.mark.parametrize("body", [
        None, [], "x", 5,
        {"orchestrationRequest": "x"}, {"orchestrationRequest": []},
        {"orchestrationRequest": {"serviceRequirement": {"serviceDefinition": 5}}},
        {"notifyInterface": "MQTT"}, {"notifyInterface": []},
        {"notifyInterface": {"protocol": 1}}, {"notifyInterface": {"protocol": ["MQTT"]}},
        {"notifyInterface": {"protocol": "a\x00b"}},
        {"notifyInterface": {"properties": "topic"}},
        {"notifyInterface": {"properties": [{"topic": "t"}]}},
        {"duration": True}, {"duration": 5.0}, {"duration": "60"},
        {"duration": MAX_SECONDS + 1}, {"targetSystemName": 5},
        {"targetSystemName": ["Car1"]},
    ])
    def test_it_declines_what_the_serializer_refuses(self, body) -> None:
        assert checked_subscribe_request(body) is None
        if isinstance(body, dict):
            assert _validated(body) is None

    def test_it_declines_bodies_beyond_the_limits(self) -> None:
        with override_settings(MAX_LIST_LENGTH=2, MAX_STRING_LENGTH=4):
            for body in ({"targetSystemName": "Car12"},
                         {"notifyInterface": {"protocol": "MQTTS!"}},
                         {"notifyInterface": {"properties": {"a": 1, "b": 2, "c": 3}}},
                         {"notifyInterface": {"properties": {"topic": "12345"}}}):
                assert checked_subscribe_request(body) is None, body
                assert _validated(body) is None, body
