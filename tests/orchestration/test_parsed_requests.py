"""Parsed pull requests kept per body (orchestration/pull/normalization.py)."""
import json

import pytest
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from conventions.exceptions import InvalidParameter
from orchestration.pull.apis import request_from_body
from orchestration.pull.normalization import parsed_request
from tests.helpers import assert_error
from tests.orchestration.helpers import PULL, pull

BODY = {"serviceRequirement": {"serviceDefinition": "temperature_info"}}


def drf_request(body: bytes, content_type: str = "application/json") -> Request:
    return Request(APIRequestFactory().post(PULL, body, content_type=content_type),
                   parsers=[JSONParser()])


class Counting:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, request: Request):
        self.calls += 1
        return request_from_body(request.data)


class ParsedRequestTests:
    def test_it_parses_a_body_once(self):
        parse, body = Counting(), json.dumps(BODY).encode()
        first = parsed_request(drf_request(body), parse)
        again = parsed_request(drf_request(body), parse)
        assert parse.calls == 1 and again is first
        assert first.requirement.service_definition == "temperatureInfo"

    def test_it_keeps_bodies_apart_by_bytes_type_and_length(self):
        parse = Counting()
        parsed_request(drf_request(b'{"exclusivityDuration": 5}'), parse)
        parsed_request(drf_request(b'{"exclusivityDuration":5}'), parse)
        parsed_request(drf_request(b'{"exclusivityDuration":5}', "application/json; x=1"),
                       parse)
        assert parse.calls == 3

    def test_it_keeps_nothing_it_refused(self):
        parse = Counting()
        for _ in range(2):
            with pytest.raises(InvalidParameter):
                parsed_request(drf_request(b'{"exclusivityDuration": 0}'), parse)
        assert parse.calls == 2

    def test_a_changed_setting_parses_again(self, settings):
        parse, body = Counting(), b'{"serviceRequirement": {"serviceDefinition": "a_b"}}'
        assert parsed_request(drf_request(body), parse).requirement.service_definition == "aB"
        settings.NORMALIZATION_MODE = "simple"  # no conversion: `a_b` is not a valid name
        with pytest.raises(InvalidParameter):
            parsed_request(drf_request(body), parse)
        assert parse.calls == 2

    @pytest.mark.django_db
    def test_a_repeated_refused_body_is_refused_alike(self, api):
        for _ in range(2):
            answer = pull(api, {"orchestrationFlags": {"MATCHMAKING": "maybe"}})
            assert_error(answer, 400, "INVALID_PARAMETER",
                         "Invalid value of orchestration flag MATCHMAKING: maybe (true or false "
                         "expected)", f"POST {PULL}")
