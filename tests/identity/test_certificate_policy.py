"""generic_https and the certificate policy, through real TLS handshakes with the production
server (gunicorn and config.tls_worker) and certificates made by `make_certificates`."""
import http.client
import io
import json
import ssl
from urllib.parse import quote

import pytest
from django.core.management import call_command

from tests.web_server import gunicorn

pytestmark = pytest.mark.django_db(transaction=True)

PULL = "/serviceorchestration/orchestration/pull"
MGMT_QUERY = "/serviceorchestration/orchestration/mgmt/simple-store/query"
ECHO = "/serviceorchestration/monitor/echo"


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    directory = tmp_path_factory.mktemp("certificates")
    call_command("make_certificates", str(directory), "--system", "Sysop:op",
                 "--system", "consumer-a", "--system", "Gadget:de", "--system", "bad@name",
                 stdout=io.StringIO())
    call_command("make_certificates", str(directory), "--cloud", "OtherCloud", "--ca-name",
                 "ca", "--server", "Unused", "--system", "Stranger", stdout=io.StringIO())
    foreign = tmp_path_factory.mktemp("untrusted")
    call_command("make_certificates", str(foreign), "--system", "Impostor",
                 stdout=io.StringIO())
    return directory, foreign


def tls_env(directory) -> dict[str, str]:
    return {"TLS_CERT_FILE": str(directory / "SimpleStoreServiceOrchestration.pem"),
            "TLS_KEY_FILE": str(directory / "SimpleStoreServiceOrchestration.key"),
            "TLS_CA_FILE": str(directory / "ca.pem")}


@pytest.fixture(scope="module")
def certificate_server(certificates, django_db_setup, django_db_blocker, tmp_path_factory):
    directory, _ = certificates
    with django_db_blocker.unblock():
        with gunicorn({**tls_env(directory), "AUTHENTICATION_POLICY": "certificate",
                       "MANAGEMENT_POLICY": "sysop-only"},
                      tmp_path_factory.mktemp("gunicorn") / "log") as port:
            yield port


@pytest.fixture(scope="module")
def declared_tls_server(certificates, django_db_setup, django_db_blocker, tmp_path_factory):
    directory, _ = certificates
    with django_db_blocker.unblock():
        with gunicorn({**tls_env(directory), "AUTHENTICATION_POLICY": "declared"},
                      tmp_path_factory.mktemp("gunicorn") / "log") as port:
            yield port


def context(directory, client: str | None = None, ca_directory=None) -> ssl.SSLContext:
    """A client TLS context trusting the test CA, presenting `client`'s certificate."""
    result = ssl.create_default_context(cafile=str((ca_directory or directory) / "ca.pem"))
    if client:
        result.load_cert_chain(str(directory / f"{client}.pem"), str(directory / f"{client}.key"))
    return result


def call(port: int, tls: ssl.SSLContext, method: str, path: str, body=None, headers=None):
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=tls, timeout=10)
    payload = json.dumps(body).encode() if body is not None else None
    all_headers = {"Content-Type": "application/json"} if payload else {}
    connection.request(method, path, body=payload, headers={**all_headers, **(headers or {})})
    response = connection.getresponse()
    status, data = response.status, response.read()
    connection.close()
    return status, data


def envelope(data: bytes) -> tuple[str, str]:
    body = json.loads(data)
    return body["exceptionType"], body["errorMessage"]


class CertificatePolicyTests:
    def test_it_identifies_a_system_by_its_certificate_alone(self, certificates,
                                                            certificate_server):
        directory, _ = certificates
        status, data = call(certificate_server, context(directory, "consumer-a"), "POST", PULL,
                            {})
        assert (status, json.loads(data)) == (200, {"results": [], "warnings": []})

    def test_it_refuses_a_request_without_certificate_with_401(self, certificates,
                                                               certificate_server):
        directory, _ = certificates
        status, data = call(certificate_server, context(directory), "POST", PULL, {})
        assert status == 401
        assert envelope(data) == (
            "AUTH", f"Unauthenticated access attempt: https://127.0.0.1:{certificate_server}{PULL}")

    def test_it_refuses_a_certificate_whose_name_is_no_system_name(self, certificates,
                                                                   certificate_server):
        directory, _ = certificates
        status, data = call(certificate_server, context(directory, "bad@name"), "POST", PULL, {})
        assert (status, envelope(data)[0]) == (401, "AUTH")

    def test_it_ignores_a_declared_identity_header(self, certificates, certificate_server):
        directory, _ = certificates
        status, _ = call(certificate_server, context(directory), "POST", MGMT_QUERY, {},
                         headers={"Authorization": "Bearer SYSTEM//Sysop"})
        assert status == 401

    def test_it_marks_operator_certificates_as_operators(self, certificates, certificate_server):
        directory, _ = certificates
        status, data = call(certificate_server, context(directory, "Sysop"), "POST", MGMT_QUERY,
                            {})
        assert (status, json.loads(data)["count"]) == (200, 0)
        status, data = call(certificate_server, context(directory, "consumer-a"), "POST",
                            MGMT_QUERY, {})
        assert (status, envelope(data)) == (
            403, ("FORBIDDEN", "Requester has no management permission"))

    def test_it_refuses_other_certificate_types_with_403(self, certificates, certificate_server):
        directory, _ = certificates
        status, data = call(certificate_server, context(directory, "Gadget"), "POST", PULL, {})
        assert (status, envelope(data)) == (403, (
            "FORBIDDEN", f"Unauthorized access: https://127.0.0.1:{certificate_server}{PULL}, "
                         "invalid certificate type: DEVICE"))

    def test_it_refuses_a_certificate_of_another_cloud_with_403(self, certificates,
                                                                certificate_server):
        directory, _ = certificates
        status, data = call(certificate_server, context(directory, "Stranger"), "POST", PULL, {})
        assert (status, envelope(data)) == (403, (
            "FORBIDDEN", f"Unauthorized access: https://127.0.0.1:{certificate_server}{PULL}, "
                         "from foreign cloud"))

    def test_it_refuses_an_untrusted_certificate_with_401(self, certificates,
                                                          certificate_server):
        """nginx verifies the certificate after the handshake and answers (deploy/nginx.conf)."""
        directory, untrusted = certificates
        tls = context(untrusted, "Impostor", ca_directory=directory)
        status, body = call(certificate_server, tls, "POST", PULL, {})
        assert (status, json.loads(body)["exceptionType"]) == (401, "AUTH")

    def test_a_client_cannot_pass_a_certificate_in_the_header_nginx_sets(self, certificates,
                                                                        certificate_server):
        directory, _ = certificates
        pem = quote((directory / "consumer-a.pem").read_text(), safe="")
        status, body = call(certificate_server, context(directory), "POST", PULL, {},
                            {"X-Client-Certificate": pem})
        assert (status, json.loads(body)["exceptionType"]) == (401, "AUTH")

    def test_it_answers_echo_over_https_without_certificate(self, certificates,
                                                            certificate_server):
        directory, _ = certificates
        assert call(certificate_server, context(directory), "GET", ECHO) == (200, b"Got it!")


class HttpsServingTests:
    def test_it_serves_the_same_api_over_https(self, certificates, declared_tls_server, api):
        directory, _ = certificates
        headers = {"Authorization": "Bearer SYSTEM//consumer-a"}
        over_https = call(declared_tls_server, context(directory), "POST", PULL, {}, headers)
        over_http = api.post(PULL, {}, format="json", HTTP_AUTHORIZATION=headers["Authorization"])
        assert over_https == (200, over_http.content)

    def test_it_refuses_plain_http_on_the_tls_port(self, declared_tls_server):
        connection = http.client.HTTPConnection("127.0.0.1", declared_tls_server, timeout=5)
        connection.request("GET", ECHO)
        response = connection.getresponse()
        assert response.status == 400
        assert json.loads(response.read())["errorMessage"] == (
            "Bad Request: plain HTTP sent to the HTTPS port")
