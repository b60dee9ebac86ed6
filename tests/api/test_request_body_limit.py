"""Issue 10 item 3: bodies over MAX_REQUEST_BODY_BYTES are answered 413 in the envelope, before
they are read, on every path; a malformed Content-Length is a 400, never a 500.

The Django test client covers the middleware; the real server (gunicorn) covers what only a
socket can send: a Content-Length without the body, and chunked bodies."""
import http.client
import json
import socket
import time

import pytest
from django.test import Client

from store.models import Rule
from tests.helpers import SYSOP, as_system, assert_error
from tests.orchestration.helpers import PULL
from tests.store.helpers import CREATE, I_CREATE, REMOVE, instance_body
from tests.web_server import gunicorn

CONSUMER = as_system("Consumer")
LIMIT = 2 * 1024 * 1024
TOO_LARGE = f"Request body too large: at most {LIMIT} bytes are accepted"


def too_large_body(size: int = LIMIT + 1) -> str:
    """Valid JSON, so that only its size can be the reason for refusing it."""
    return json.dumps({"padding": "x" * (size - len('{"padding": ""}'))})


@pytest.mark.django_db
class BodyLimitTests:
    @pytest.mark.parametrize("path", [PULL, CREATE, "/serviceorchestration/nothing/here",
                                      "/whatever"])
    def test_it_answers_a_body_over_the_limit_with_413(self, api, path):
        response = api.post(path, data=too_large_body(), content_type="application/json",
                            **SYSOP)
        assert_error(response, 413, "INVALID_PARAMETER", TOO_LARGE, f"POST {path}")

    def test_it_answers_413_before_asking_for_identity(self, api):
        response = api.post(PULL, data=too_large_body(), content_type="application/json")
        assert response.status_code == 413

    def test_it_accepts_a_body_of_exactly_the_limit(self, api):
        body = too_large_body(LIMIT)
        assert len(body.encode()) == LIMIT
        response = api.post(PULL, data=body, content_type="application/json", **CONSUMER)
        assert response.status_code == 200, response.content

    def test_it_answers_a_too_large_admin_form_with_413(self):
        client = Client(raise_request_exception=False)
        response = client.post("/admin/login/", data="a=" + "b" * LIMIT,
                               content_type="application/x-www-form-urlencoded")
        assert_error(response, 413, "INVALID_PARAMETER", TOO_LARGE, "POST /admin/login/")

    @pytest.mark.parametrize("length", ["abc", "-1", "1e3", "12 34", "0x10"])
    def test_it_answers_a_malformed_content_length_with_400(self, length):
        client = Client(raise_request_exception=False)
        for path in (PULL, "/admin/login/"):
            response = client.post(path, data="{}", content_type="application/json",
                                   CONTENT_LENGTH=length, **CONSUMER)
            assert_error(response, 400, "INVALID_PARAMETER", "Invalid Content-Length header",
                         f"POST {path}")

    def test_it_answers_a_large_declared_length_without_reading_the_body(self, api):
        # The test client sends 2 bytes but declares a gigabyte: answered from the header.
        response = api.post(PULL, data="{}", content_type="application/json",
                            CONTENT_LENGTH=str(10**9), **CONSUMER)
        assert_error(response, 413, "INVALID_PARAMETER", TOO_LARGE, f"POST {PULL}")

    def test_the_largest_create_the_bulk_limit_allows_fits_the_default_limit(self, api):
        """MAX_BULK_SIZE (1000) instances like the documented example, each with two
        interfaces, metadata and a long expiry: the default limit must let them through."""
        interface = {"templateName": "generic_http", "protocol": "http", "policy": "NONE",
                     "properties": {"accessAddresses": ["192.168.100.100", "provider.example"],
                                    "accessPort": 8080, "basePath": "/temperature-service",
                                    "operations": {name: {"path": f"/{name}", "method": "GET"}
                                                   for name in ("query", "history", "stats")}}}
        instances = [instance_body(f"TemperatureProvider{i:04d}", "temperatureInfo",
                                   expiresAt="2099-12-31T23:59:59Z",
                                   metadata={"unit": "celsius", "location": "building-7",
                                             "floor": 3, "accuracy": 0.5},
                                   interfaces=[interface, {**interface, "templateName": "generic_https",
                                                           "protocol": "https"}])
                     for i in range(1000)]
        body = json.dumps({"instances": instances})
        assert len(body.encode()) < LIMIT
        response = api.post(I_CREATE, data=body, content_type="application/json", **SYSOP)
        assert response.status_code == 201, response.content[:300]


@pytest.fixture(scope="module")
def small_limit_server(django_db_setup, django_db_blocker, tmp_path_factory):
    with django_db_blocker.unblock():
        with gunicorn({"MAX_REQUEST_BODY_BYTES": "4096"},
                      tmp_path_factory.mktemp("gunicorn") / "log") as port:
            yield port


def exchange(port: int, head: str, body: bytes = b"") -> tuple[int, dict]:
    """Send a raw request; the status and JSON body of the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(head.encode("latin-1") + b"\r\n" + body)
        response = http.client.HTTPResponse(connection)
        response.begin()
        return response.status, json.loads(response.read())


def request_head(path: str, *headers: str) -> str:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json",
             "Authorization: Bearer SYSTEM//Sysop", "Connection: close", *headers]
    return "\r\n".join(lines) + "\r\n"


def chunked(data: bytes, size: int = 1000) -> bytes:
    pieces = [data[i:i + size] for i in range(0, len(data), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces) + b"0\r\n\r\n"


@pytest.mark.django_db(transaction=True)
class RealServerBodyLimitTests:
    @pytest.mark.parametrize("path", [PULL, "/serviceorchestration/nothing/here", "/admin/"])
    def test_it_answers_a_large_content_length_alone_with_413(self, small_limit_server, path):
        # Only the header: the body never comes, so an answer proves it was not waited for.
        status, body = exchange(small_limit_server,
                                request_head(path, f"Content-Length: {10**9}"))
        assert status == 413
        assert body["errorMessage"] == "Request body too large: at most 4096 bytes are accepted"

    def test_it_answers_a_chunked_body_over_the_limit_with_413(self, small_limit_server):
        data = too_large_body(4097).encode()
        status, body = exchange(small_limit_server,
                                request_head(PULL, "Transfer-Encoding: chunked"), chunked(data))
        assert (status, body["exceptionType"]) == (413, "INVALID_PARAMETER")

    def test_it_stops_reading_a_chunked_body_one_byte_past_the_limit(self, small_limit_server):
        # The body never ends (no last chunk): an answer proves the rest was not waited for.
        endless_start = chunked(b"x" * 5000)[:-len(b"0\r\n\r\n")]
        status, body = exchange(small_limit_server,
                                request_head(PULL, "Transfer-Encoding: chunked"), endless_start)
        assert (status, body["errorCode"]) == (413, 413)

    @pytest.mark.parametrize("framing", [
        b"zz\r\n",                                  # a chunk size that is not hex
        b"-2\r\n",                                  # a negative chunk size
        b"2\r\n{}XX",                               # a chunk without its CRLF
        # (nginx discards trailers unread: a malformed one is no error.)
    ])
    @pytest.mark.parametrize("path", [PULL, "/serviceorchestration/monitor/echo"])
    def test_it_answers_a_malformed_chunked_body_with_400(self, small_limit_server, framing,
                                                          path):
        status, body = exchange(small_limit_server,
                                request_head(path, "Transfer-Encoding: chunked"), framing)
        assert (status, body["exceptionType"]) == (400, "INVALID_PARAMETER"), body
        assert body["errorMessage"].startswith("Malformed request body: ")

    def test_it_answers_a_chunk_whose_crlf_arrives_broken_later_with_400(self,
                                                                           small_limit_server):
        """The server gathers a chunked body as it arrives: a chunk's missing CRLF must be
        noticed when it comes in a later packet too, not waited out until the body deadline."""
        with socket.create_connection(("127.0.0.1", small_limit_server), timeout=30) as sock:
            sock.sendall(request_head(PULL, "Transfer-Encoding: chunked").encode() + b"\r\n"
                         + b"2\r\n{}")
            time.sleep(0.3)  # a second packet, after the server has looked at the first
            sock.sendall(b"XX")
            response = http.client.HTTPResponse(sock)
            response.begin()
            body = json.loads(response.read())
        assert (response.status, body["exceptionType"]) == (400, "INVALID_PARAMETER"), body

    def test_it_refuses_nul_in_the_url_through_the_real_server(self, small_limit_server):
        status, body = exchange(small_limit_server, request_head(
            f"{REMOVE}?uuids=%00", "Content-Length: 0").replace("POST", "DELETE", 1))
        assert (status, body["errorMessage"]) == (
            400, "Query parameter uuids: NUL characters (U+0000) are not allowed.")

    def test_it_reads_a_chunked_body_within_the_limit(self, small_limit_server):
        data = json.dumps({"entries": [{"consumer": "ChunkedConsumer",
                                        "serviceInstanceId": "P|temperatureInfo|1.0.0",
                                        "priority": 1}]}).encode()
        status, body = exchange(small_limit_server,
                                request_head(CREATE, "Transfer-Encoding: chunked"),
                                chunked(data, 16))
        assert status == 201, body
        assert Rule.objects.filter(consumer="ChunkedConsumer").count() == 1
