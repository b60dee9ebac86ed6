"""Issue 10 items 1 and 2 at the mechanism: what api.input_safety refuses in bodies, the
request guard in URLs and headers, and that no error message can fail to encode."""
import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.test import Client, RequestFactory, override_settings

from api.errors import envelope, exception_handler
from api.input_safety import encodable, json_problem
from api.json_media import JSONRenderer
from conventions.exceptions import InvalidParameter
from store.models import Rule, ServiceInstance
from tests.helpers import SYSOP, as_system, assert_error, with_token
from tests.store.helpers import I_REMOVE, REMOVE
from tests.subscriptions.helpers import UNSUBSCRIBE

VERIFY = "/serviceorchestration/authorization-token/verify"
NUL = "NUL characters (U+0000) are not allowed."
SURROGATE = "Unpaired surrogates (U+D800 to U+DFFF) are not allowed."


class JsonProblemTests:
    @pytest.mark.parametrize("document, expected", [
        ({"a": {"b": [1, {"c": "x\x00"}]}}, f"a.b[1].c: {NUL}"),
        ([{"ok": 1}, "\ud800"], f"[1]: {SURROGATE}"),
        ("\udfff", SURROGATE),
        ({"a": {"b\x00": 1}}, f"a: Field name: {NUL}"),
        ({"x": 1e308 * 10}, "x: Number out of range."),
        ({"x": [float("nan")]}, "x[0]: Number out of range."),
    ])
    def test_it_names_the_path_of_the_refused_value(self, document, expected):
        assert json_problem(document) == expected

    def test_it_reports_the_first_refused_value_in_document_order(self):
        assert json_problem({"a": ["ok", "\x00"], "b": "\ud800"}) == f"a[1]: {NUL}"

    def test_it_accepts_what_can_be_stored(self):
        document = {"emoji": "\U0001F600", "pair": json.loads('"\\ud83d\\ude00"'),
                    "numbers": [0, -1.5, 10**100], "empty": [{}, [], "", None, True],
                    # what the fast screen mistakes for a refused value until it walks
                    "look-alikes": ["\\u0000", "Infinity", "-Infinity", "NaN"]}
        assert json_problem(document) is None

    def test_it_walks_any_depth_without_recursion(self):
        document: object = "\x00"
        for _ in range(200_000):
            document = [document]
        assert json_problem(document) == f"{'[0]' * 200_000}: {NUL}"


class EncodableErrorsTests:
    """Defence in depth: a message echoing a surrogate from anywhere still renders."""

    def test_the_envelope_replaces_unencodable_characters(self):
        body = envelope("bad value: \ud800", 400, "INVALID_PARAMETER", "POST /x\udc00")
        assert body["errorMessage"] == "bad value: \ufffd"
        assert body["origin"] == "POST /x\ufffd"

    def test_an_exception_echoing_a_surrogate_renders_as_utf8(self):
        request = RequestFactory().post("/serviceorchestration/orchestration/pull")
        response = exception_handler(InvalidParameter("Invalid flag: \ud800"),
                                     {"request": request})
        rendered = JSONRenderer().render(response.data)
        assert json.loads(rendered.decode("utf-8"))["errorMessage"] == "Invalid flag: \ufffd"

    def test_the_renderer_replaces_surrogates_anywhere_in_the_data(self):
        rendered = JSONRenderer().render({"a\ud800": ["\udfff", {"b": "ok \U0001F600"}]})
        assert json.loads(rendered) == {"a\ufffd": ["\ufffd", {"b": "ok \U0001F600"}]}

    def test_encodable_leaves_valid_text_alone(self):
        assert encodable("ok \U0001F600 \x00") == "ok \U0001F600 \x00"


@pytest.mark.django_db
class UrlAndHeaderTests:
    """Input that reaches views and the database outside the JSON body."""

    @pytest.mark.parametrize("method, url, message", [
        ("delete", f"{REMOVE}?uuids=%00", f"Query parameter uuids: {NUL}"),
        ("delete", f"{REMOVE}?uuids=00000000-0000-0000-0000-000000000000,%00",
         f"Query parameter uuids: {NUL}"),
        ("delete", f"{I_REMOVE}?ids=a%00b", f"Query parameter ids: {NUL}"),
        ("delete", f"{I_REMOVE}?%00=1", f"Query parameter name: {NUL}"),
        ("delete", f"{UNSUBSCRIBE}/%00", f"Path: {NUL}"),
        ("get", f"{VERIFY}/abc%00def", f"Path: {NUL}"),
        ("get", "/admin/store/rule/?q=%00", f"Query parameter q: {NUL}"),
        ("get", "/serviceorchestration/nothing%00", f"Path: {NUL}"),
    ])
    def test_it_refuses_nul_in_the_url_naming_where(self, method, url, message):
        client = Client(raise_request_exception=False)
        response = getattr(client, method)(url, **SYSOP)
        assert response.status_code == 400, response.content
        assert response.json()["errorMessage"] == message

    @pytest.mark.parametrize("url", [f"{REMOVE}?uuids=%ED%A0%80", f"{I_REMOVE}?ids=%FF%FE",
                                     f"{UNSUBSCRIBE}/%ED%A0%80", f"{VERIFY}/%FF"])
    def test_invalid_utf8_in_the_url_is_no_server_error(self, url):
        client = Client(raise_request_exception=False)
        response = client.generic("DELETE" if "verify" not in url else "GET", url, **SYSOP)
        assert response.status_code < 500, response.content  # decoded with U+FFFD by Django

    def test_too_many_query_parameters_are_no_server_error(self):
        client = Client(raise_request_exception=False)
        query = "&".join(f"uuids={i}" for i in range(5000))
        response = client.delete(f"{REMOVE}?{query}", **SYSOP)
        assert_error(response, 400, "INVALID_PARAMETER",
                     "Too many query parameters or form fields: at most 1000 are accepted",
                     f"DELETE {REMOVE}")

    def test_it_refuses_nul_in_the_declared_name(self):
        client = Client(raise_request_exception=False)
        response = client.get("/serviceorchestration/nothing", HTTP_AUTHORIZATION="Bearer "
                              "SYSTEM//Abc\x00")
        assert_error(response, 400, "INVALID_PARAMETER", f"Header Authorization: {NUL}",
                     "GET /serviceorchestration/nothing")

    @override_settings(AUTHENTICATION_POLICY="token")
    def test_it_refuses_nul_in_an_identity_token(self):
        client = Client(raise_request_exception=False)
        response = client.post("/serviceorchestration/orchestration/pull",
                               **with_token("abc\x00def"))
        assert response.status_code == 400
        assert response.json()["errorMessage"] == f"Header Authorization: {NUL}"

    def test_it_refuses_nul_in_any_header(self):
        client = Client(raise_request_exception=False)
        response = client.get("/serviceorchestration/monitor/echo", HTTP_X_FORWARDED_FOR="\x00",
                              **as_system("Consumer"))
        assert response.json()["errorMessage"] == f"Header X-Forwarded-For: {NUL}"


@pytest.mark.django_db
class ImportFileTests:
    """The import commands read JSON files: the same check as request bodies."""

    @pytest.mark.parametrize("command, document, path", [
        ("import_instances", {"instances": [{"systemName": "P", "metadata": {"a": "\x00"}}]},
         "instances[0].metadata.a: NUL characters (U+0000) are not allowed."),
        ("import_rules", {"entries": [{"consumer": "\ud800"}]},
         "entries[0].consumer: Unpaired surrogates (U+D800 to U+DFFF) are not allowed."),
    ])
    def test_it_refuses_a_file_with_what_cannot_be_stored(self, tmp_path, command, document,
                                                          path):
        source = tmp_path / "import.json"
        source.write_text(json.dumps(document))
        err = io.StringIO()
        with pytest.raises(CommandError, match="1 bad entry"):
            call_command(command, str(source), stderr=err)
        assert err.getvalue().splitlines() == [path]
        assert not ServiceInstance.objects.exists() and not Rule.objects.exists()
