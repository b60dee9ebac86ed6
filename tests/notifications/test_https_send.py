"""HTTPS notifications verify the subscriber's certificate and host name against the system's
trusted CAs (OpenSSL's default paths, which SSL_CERT_FILE overrides): a subscriber whose
certificate the system trusts gets the notification, one it does not trust gets nothing."""
import io
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.core.management import call_command

from notifications.models import NotificationDelivery
from notifications.services import delivery_send
from tests.endpoints import make_delivery

pytestmark = pytest.mark.django_db

Status = NotificationDelivery.Status


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    directory = tmp_path_factory.mktemp("certificates")
    call_command("make_certificates", str(directory), "--server", "Subscriber",
                 stdout=io.StringIO())
    return directory


@pytest.fixture
def https_sink(certificates):
    """A subscriber's HTTPS endpoint on 127.0.0.1 (its certificate names 127.0.0.1); yields
    (its port, the paths it was sent)."""
    received: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            received.append(self.path)
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificates / "Subscriber.pem", certificates / "Subscriber.key")
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server.server_address[1], received
    server.shutdown()
    server.server_close()
    thread.join()


def properties(port: int) -> dict:
    return {"address": "127.0.0.1", "port": port, "method": "POST", "path": "/notify"}


def test_a_subscriber_whose_certificate_the_system_trusts_is_notified(
        https_sink, certificates, monkeypatch):
    port, received = https_sink
    monkeypatch.setenv("SSL_CERT_FILE", str(certificates / "ca.pem"))
    delivery = make_delivery("HTTPS", properties(port))

    assert delivery_send(delivery.id) == Status.DELIVERED
    assert received == ["/notify"]


def test_a_subscriber_whose_certificate_is_not_trusted_gets_nothing(
        https_sink, tmp_path, monkeypatch):
    port, received = https_sink
    (tmp_path / "none.pem").write_text("")
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "none.pem"))
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path))
    delivery = make_delivery("HTTPS", properties(port))

    assert delivery_send(delivery.id) != Status.DELIVERED
    delivery.refresh_from_db()
    assert "CERTIFICATE_VERIFY_FAILED" in delivery.last_error
    assert received == []
