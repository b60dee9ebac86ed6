"""The OpenAPI schema describes both general management operations as the service serves
them."""
import re
from pathlib import Path

import pytest
from django.conf import settings

from tests.general.helpers import GET_CONFIG, LOGS, post_logs
from tests.helpers import SYSOP

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("quiet_log_table")]


@pytest.fixture
def schema(api) -> dict:
    return api.get("/api/schema/?format=json").json()


def _ok(operation: dict) -> dict:
    return operation["responses"]["200"]["content"]["application/json"]["schema"]


class GeneralManagementSchemaTests:
    def test_it_documents_both_operations_with_their_bodies(self, schema):
        logs, config = schema["paths"][LOGS], schema["paths"][GET_CONFIG]
        assert set(logs) == {"post"} and set(config) == {"get"}
        assert _ok(logs["post"]) == {"$ref": "#/components/schemas/LogList"}
        assert _ok(config["get"]) == {"$ref": "#/components/schemas/ConfigMap"}
        assert {"400", "401", "403"} <= set(logs["post"]["responses"])
        keys = config["get"]["parameters"][0]
        assert (keys["name"], keys["required"], keys["schema"]["minItems"]) == ("keys", True, 1)

    def test_a_null_logs_body_is_documented_and_served_as_no_body(self, api, schema):
        body = schema["paths"][LOGS]["post"]["requestBody"]["content"]["application/json"]
        assert body["schema"]["nullable"] is True
        response = api.post(LOGS, "null", content_type="application/json", **SYSOP)
        assert response.json() == {"entries": [], "count": 0}

    @pytest.mark.parametrize("severity, accepted", [
        ("warn", True), (" Critical ", True), ("OFF", True), ("", True), ("nope", False),
        ("ınfo", False)])
    def test_the_severity_pattern_is_what_the_service_accepts(self, api, schema, severity,
                                                             accepted):
        request = schema["components"]["schemas"]["LogQueryRequest"]["properties"]
        pattern = request["severity"]["pattern"]
        assert bool(re.fullmatch(pattern, severity)) is accepted
        assert (post_logs(api, {"severity": severity}).status_code == 200) is accepted

    @pytest.mark.parametrize("value, accepted", [
        ("2025-02-01T00:00:00Z", True), (" 2025-02-01T00:00:00.5Z\n", True), ("", True),
        ("2025-02-01", False), ("2025-02-01T00:00:00+00:00", False)])
    def test_the_instant_pattern_is_what_the_service_accepts(self, api, schema, value,
                                                            accepted):
        request = schema["components"]["schemas"]["LogQueryRequest"]["properties"]
        assert "oneOf" not in request["from"]  # one alternative, blank included
        assert bool(re.fullmatch(request["from"]["pattern"], value)) is accepted
        assert (post_logs(api, {"from": value}).status_code == 200) is accepted


def test_the_schema_carries_the_release_of_the_version_file(schema):
    release = (Path(settings.BASE_DIR) / "VERSION").read_text().strip()
    assert schema["info"]["version"] == release
