import logging

import pytest
from django.test import Client

from api.errors import first_validation_message
from tests.helpers import as_system, assert_error, assert_unauthenticated
from tests.probe_urls import PROBE

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.probe_urls")]

CONSUMER = as_system("Consumer")


class ErrorEnvelopeTests:
    def test_it_answers_malformed_json_with_400(self, api):
        response = api.post(f"{PROBE}/whoami", data="{bad", content_type="application/json",
                            **CONSUMER)
        assert response.status_code == 400
        body = response.json()
        assert body["exceptionType"] == "INVALID_PARAMETER"
        assert body["errorCode"] == 400
        assert body["errorMessage"].startswith("JSON parse error")
        assert body["origin"] == f"POST {PROBE}/whoami"

    def test_it_answers_too_deeply_nested_json_with_400(self, api):
        response = api.post(f"{PROBE}/whoami", data="[" * 200000,
                            content_type="application/json", **CONSUMER)
        assert_error(response, 400, "INVALID_PARAMETER", "JSON parse error - nesting too deep",
                     f"POST {PROBE}/whoami")

    def test_it_answers_unsupported_content_type_with_415(self, api):
        response = api.post(f"{PROBE}/whoami", data="a=b",
                            content_type="application/x-www-form-urlencoded", **CONSUMER)
        assert_error(response, 415, "INVALID_PARAMETER",
                     'Unsupported media type "application/x-www-form-urlencoded" in request.',
                     f"POST {PROBE}/whoami")

    def test_it_answers_unknown_path_with_404(self, api):
        response = api.get("/serviceorchestration/nothing/here?x=1", **CONSUMER)
        assert_error(response, 404, "DATA_NOT_FOUND",
                     "No such endpoint: GET /serviceorchestration/nothing/here",
                     "GET /serviceorchestration/nothing/here")

    def test_it_answers_unknown_path_outside_the_base_path_with_404(self, api):
        response = api.delete("/whatever", **CONSUMER)
        assert_error(response, 404, "DATA_NOT_FOUND", "No such endpoint: DELETE /whatever",
                     "DELETE /whatever")

    def test_it_asks_for_identity_before_revealing_that_a_path_is_unknown(self, api):
        response = api.get("/serviceorchestration/nothing/here")
        assert_unauthenticated(response, "GET /serviceorchestration/nothing/here",
                               "No authorization header has been provided")
        assert response["WWW-Authenticate"] == "Bearer"

    def test_it_answers_wrong_method_with_405(self, api):
        response = api.put(f"{PROBE}/whoami", **CONSUMER)
        assert_error(response, 405, "INVALID_PARAMETER", 'Method "PUT" not allowed.',
                     f"PUT {PROBE}/whoami")

    def test_it_answers_wrong_method_on_echo_with_405(self, api):
        response = api.post("/serviceorchestration/monitor/echo")
        assert_error(response, 405, "INVALID_PARAMETER", 'Method "POST" not allowed.',
                     "POST /serviceorchestration/monitor/echo")

    def test_it_answers_http404_raised_in_a_view_with_the_envelope(self, api):
        response = api.get(f"{PROBE}/http404", **CONSUMER)
        assert_error(response, 404, "DATA_NOT_FOUND", "Not found", f"GET {PROBE}/http404")

    def test_it_hides_unhandled_exceptions_and_logs_them_with_the_request_id(self, api, caplog):
        with caplog.at_level(logging.ERROR):
            response = api.get(f"{PROBE}/crash", HTTP_X_REQUEST_ID="req-42", **CONSUMER)
        assert_error(response, 500, "INTERNAL_SERVER_ERROR",
                     "Internal server error (request id req-42)", f"GET {PROBE}/crash")
        assert "hunter2" not in response.content.decode()
        assert "Traceback" not in response.content.decode()
        logged = [r for r in caplog.records if r.name == "serviceorchestration.errors"]
        assert len(logged) == 1
        assert "req-42" in logged[0].getMessage()
        assert "hunter2" in str(logged[0].exc_info[1])

    def test_it_answers_errors_outside_the_api_views_with_the_envelope(self, caplog):
        client = Client(raise_request_exception=False)
        with caplog.at_level(logging.ERROR):
            response = client.get(f"{PROBE}/plain-crash")
        assert response.status_code == 500
        body = response.json()
        assert body["exceptionType"] == "INTERNAL_SERVER_ERROR"
        assert body["origin"] == f"GET {PROBE}/plain-crash"
        assert "secret" not in body["errorMessage"]
        assert any(r.name == "serviceorchestration.errors" for r in caplog.records)

    def test_it_gives_every_response_a_request_id(self, api):
        response = api.get("/serviceorchestration/monitor/echo")
        assert len(response["X-Request-ID"]) == 32
        supplied = api.get("/serviceorchestration/monitor/echo", HTTP_X_REQUEST_ID="abc-1")
        assert supplied["X-Request-ID"] == "abc-1"
        unsafe = api.get("/serviceorchestration/monitor/echo", HTTP_X_REQUEST_ID="a b\nc")
        assert unsafe["X-Request-ID"] != "a b\nc"


class FirstValidationMessageTests:
    def test_it_names_a_top_level_field(self):
        assert first_validation_message({"priority": ["A valid integer is required."]}) == (
            "priority: A valid integer is required."
        )

    def test_it_names_a_field_inside_a_list_item(self):
        detail = {"entries": [{}, {"priority": ["This field is required."]}]}
        assert first_validation_message(detail) == "entries[1].priority: This field is required."

    def test_it_names_an_item_of_a_list_field(self):
        detail = {"versions": {2: ["Not a valid string."]}}
        assert first_validation_message(detail) == "versions[2]: Not a valid string."

    def test_it_names_a_nested_object_field(self):
        detail = {"serviceRequirement": {"versions": {"0": ["Not a valid string."]}}}
        assert first_validation_message(detail) == (
            "serviceRequirement.versions.0: Not a valid string."
        )

    def test_it_keeps_non_field_errors_unprefixed(self):
        assert first_validation_message({"non_field_errors": ["Bad combination."]}) == (
            "Bad combination."
        )
        assert first_validation_message(["Expected a list."]) == "Expected a list."
