import io

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db


class ServiceEndpointTests:
    def test_it_answers_echo(self, api):
        response = api.get("/serviceorchestration/monitor/echo")
        assert (response.status_code, response.content) == (200, b"Got it!")

    def test_it_serves_the_openapi_schema_without_identity(self, api):
        response = api.get("/api/schema/?format=json")
        assert response.status_code == 200
        schema = response.json()
        assert schema["openapi"].startswith("3.")
        assert "/serviceorchestration/monitor/echo" in schema["paths"]
        scheme = schema["components"]["securitySchemes"]["arrowheadIdentity"]
        assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")

    def test_it_documents_every_rule_store_operation_with_its_shapes(self, api):
        paths = api.get("/api/schema/?format=json").json()["paths"]
        base = "/serviceorchestration/orchestration/mgmt/simple-store"
        assert set(paths[f"{base}/query"]) == {"post", "delete"}
        assert set(paths[f"{base}/modify-priorities"]) == {"put", "post"}
        assert set(paths[f"{base}/remove"]) == {"delete"}
        assert set(paths[base]) == {"delete"}
        create = paths[f"{base}/create"]["post"]
        # 413, 414, 431 and 503 come before any view, on every operation (api.schema).
        assert set(create["responses"]) == {"201", "400", "401", "403", "406", "413", "414",
                                            "415", "423", "431", "500", "503"}
        assert create["responses"]["400"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/ErrorResponse"}

    def test_it_generates_a_valid_schema_without_warnings(self):
        out = io.StringIO()
        call_command("spectacular", "--validate", "--fail-on-warn", "--format", "openapi-json",
                     stdout=out)
        assert '"openapi"' in out.getvalue()

    def test_it_serves_swagger_ui_without_identity(self, api):
        response = api.get("/api/docs/")
        assert response.status_code == 200
        assert b"swagger-ui" in response.content
        assert b"/static/drf_spectacular_sidecar/swagger-ui-dist/" in response.content

    def test_it_serves_the_admin_login_page(self, api):
        response = api.get("/admin/login/")
        assert response.status_code == 200
        assert b"csrfmiddlewaretoken" in response.content

    def test_it_redirects_the_root_to_the_api_docs(self, api):
        response = api.get("/")
        assert (response.status_code, response["Location"]) == (302, "/api/docs/")


class AnswerNewlineTests:
    """Answers end with a newline where a terminal shows them (docs/decisions.md, "Answers end
    with a newline"): every JSON answer; text answers for the command-line tools only, since
    Arrowhead clients read the text as a value."""

    ECHO = "/serviceorchestration/monitor/echo"

    @pytest.mark.parametrize("agent", ["curl/8.5.0", "Wget/1.21.3", "HTTPie/3.2.2"])
    def test_echo_is_a_line_for_command_line_tools(self, api, agent):
        assert api.get(self.ECHO, HTTP_USER_AGENT=agent).content == b"Got it!\n"

    @pytest.mark.parametrize("agent", [None, "Java/17.0.9", "Apache-HttpClient/5.2",
                                       "Python-urllib/3.11", "xcurl/1"])
    def test_echo_is_the_bare_value_for_everyone_else(self, api, agent):
        headers = {"HTTP_USER_AGENT": agent} if agent else {}
        assert api.get(self.ECHO, **headers).content == b"Got it!"

    def test_a_json_answer_ends_with_one_newline(self, api):
        response = api.post("/serviceorchestration/orchestration/pull",
                            {"serviceRequirement": {"serviceDefinition": "temperatureInfo"}},
                            format="json", HTTP_AUTHORIZATION="Bearer SYSTEM//consumer")
        assert response.status_code == 200
        assert response.content.endswith(b"}\n") and not response.content.endswith(b"\n\n")
        assert response.json()["results"] == []

    def test_an_error_envelope_ends_with_a_newline_in_and_outside_the_views(self, api):
        drf = api.post("/serviceorchestration/orchestration/pull", "{", content_type=
                       "application/json", HTTP_AUTHORIZATION="Bearer SYSTEM//consumer")
        middleware = api.get(self.ECHO + "%00")
        for response in (drf, middleware):
            assert response.status_code == 400, response.content
            assert response.content.endswith(b"}\n")
            assert set(response.json()) == {"errorMessage", "errorCode", "exceptionType",
                                            "origin"}

    @pytest.mark.parametrize("query, media_type", [
        ("?format=json", "application/vnd.oai.openapi+json"),
        ("?format=yaml", "application/vnd.oai.openapi;")])
    def test_the_openapi_document_ends_with_one_newline(self, api, query, media_type):
        response = api.get(f"/api/schema/{query}")
        assert response.status_code == 200 and media_type in response["Content-Type"]
        assert response.content.endswith(b"\n") and not response.content.endswith(b"\n\n")
