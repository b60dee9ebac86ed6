"""HTTP notify destinations at send time (issue 29, item 2): the name is resolved again before
every attempt and every address checked (DNS rebinding), the connection goes to a checked
address, a refused destination fails for good without connecting; and a destination that does
not answer in HTTP (a database's or Redis's port) fails for good after NOT_HTTP_MAX_ATTEMPTS
attempts instead of being retried forever."""
import ipaddress
import socket
import threading
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from django.utils import timezone

from notifications import address_policy
from notifications.models import NotificationDelivery
from notifications.services import NOT_HTTP_MAX_ATTEMPTS, delivery_send
from subscriptions.models import Subscription
from tests.endpoints import make_delivery
from tests.subscriptions.helpers import subscribe, subscription_body

pytestmark = pytest.mark.django_db

Status = NotificationDelivery.Status
HINT = "see NOTIFY_HTTP_ALLOWED_NETWORKS"


class RawServer:
    """A TCP server on 127.0.0.1 that is not HTTP: to every connection it sends `answer` (none:
    it closes at once) and closes. Counts the connections it accepted."""

    def __init__(self, answer: bytes = b"") -> None:
        self.answer, self.connections = answer, 0
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self._socket.accept()
            except OSError:  # closed
                return
            self.connections += 1
            with connection:
                if self.answer:
                    connection.recv(65536)
                    connection.sendall(self.answer)

    def properties(self, address: str = "127.0.0.1") -> dict:
        return {"address": address, "port": self.port, "method": "POST", "path": "/notify"}

    def close(self) -> None:
        self._socket.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept() (close() does not)
        self._socket.close()
        self._thread.join()


@pytest.fixture
def silent_server() -> Iterator[RawServer]:
    """Accepts and closes at once; used to see whether a connection was made."""
    server = RawServer()
    yield server
    server.close()


def attempt(delivery: NotificationDelivery) -> NotificationDelivery:
    """One attempt at `delivery`, made due first (its backoff skipped)."""
    NotificationDelivery.objects.filter(id=delivery.id).update(next_attempt_at=timezone.now())
    delivery_send(delivery.id)
    delivery.refresh_from_db()
    return delivery


class SendTimeCheckTests:
    def test_a_name_that_resolves_elsewhere_at_send_time_fails_without_connecting(
            self, api, settings, resolver, silent_server):
        settings.NOTIFY_HTTP_ALLOWED_NETWORKS = ()
        resolver["hooks.example"] = ["203.0.114.7"]  # public when subscribing
        body = subscription_body(notify={"protocol": "HTTP",
                                         "properties": silent_server.properties("hooks.example")})
        assert subscribe(api, body, query="?trigger=false").status_code == 201
        resolver["hooks.example"] = ["127.0.0.1"]  # rebound to this machine
        properties = Subscription.objects.get().notify_properties
        delivery = attempt(make_delivery("HTTP", properties))
        assert (delivery.status, delivery.attempts) == (Status.FAILED, 1)
        assert delivery.last_error == (
            f"http://hooks.example:{silent_server.port}/notify: Notify address hooks.example "
            f"resolves to 127.0.0.1, a loopback address; {HINT}")
        assert silent_server.connections == 0

    @pytest.mark.parametrize("protocol", ["HTTP", "HTTPS"])
    def test_a_stored_internal_address_fails_without_connecting(self, settings, silent_server,
                                                                 protocol):
        """Subscriptions made before the check, or while the network was allowed."""
        settings.NOTIFY_HTTP_ALLOWED_NETWORKS = ()
        delivery = attempt(make_delivery(protocol, silent_server.properties("::ffff:127.0.0.1")))
        assert (delivery.status, delivery.attempts) == (Status.FAILED, 1)
        assert delivery.last_error.endswith(
            f"Notify address ::ffff:127.0.0.1 is a loopback address; {HINT}")
        assert silent_server.connections == 0

    def test_it_connects_to_the_address_it_checked(self, settings, resolver, monkeypatch,
                                                   http_sink):
        """One resolution per attempt, the policy's: the connection does not resolve the name
        again (that would reopen the window for rebinding; the system cannot resolve it)."""
        settings.NOTIFY_HTTP_ALLOWED_NETWORKS = (ipaddress.ip_network("127.0.0.0/8"),)
        resolver["hooks.example"] = ["127.0.0.1"]
        looked_up = []
        resolve = address_policy.resolve_host
        monkeypatch.setattr(address_policy, "resolve_host",
                            lambda host: looked_up.append(host) or resolve(host))
        delivery = attempt(make_delivery("HTTP", {**http_sink.properties(),
                                                  "address": "hooks.example"}))
        assert delivery.status == Status.DELIVERED, delivery.last_error
        assert looked_up.count("hooks.example") == 1
        assert [request.headers["host"] for request in http_sink.requests] == \
            [f"hooks.example:{http_sink.port}"]


@pytest.fixture(params=["garbage", "closes at once"])
def not_http_server(request) -> Iterator[RawServer]:
    server = RawServer(b"\x00\x01\x02 not HTTP\r\n\r\n" if request.param == "garbage" else b"")
    yield server
    server.close()


class NotHttpTests:
    def test_it_fails_for_good_after_the_bound(self, not_http_server):
        delivery = make_delivery("HTTP", not_http_server.properties())
        for number in range(1, NOT_HTTP_MAX_ATTEMPTS):
            delivery = attempt(delivery)
            assert (delivery.status, delivery.attempts) == (Status.PENDING, number)
            assert "not an HTTP answer" in delivery.last_error
        delivery = attempt(delivery)
        assert (delivery.status, delivery.attempts) == (Status.FAILED, NOT_HTTP_MAX_ATTEMPTS)
        assert delivery.last_error.endswith(
            f"; given up at attempt {NOT_HTTP_MAX_ATTEMPTS} (at most {NOT_HTTP_MAX_ATTEMPTS} "
            "for an answer that is not HTTP)")
        assert not_http_server.connections == NOT_HTTP_MAX_ATTEMPTS

    @pytest.mark.parametrize("server", ["PostgreSQL", "Redis"])
    def test_the_database_and_the_broker_fail_for_good_after_the_bound(self, settings, server):
        """The issue's attack: these were retried forever (loopback allowed, as in the suite)."""
        if server == "Redis":
            port = urlsplit(settings.CELERY_BROKER_URL).port or 6379
        else:
            port = int(settings.DATABASES["default"].get("PORT") or 5432)
        delivery = make_delivery("HTTP", {"address": "127.0.0.1", "port": port,
                                          "method": "POST", "path": "/"})
        for _ in range(NOT_HTTP_MAX_ATTEMPTS):
            delivery = attempt(delivery)
        assert (delivery.status, delivery.attempts) == (Status.FAILED, NOT_HTTP_MAX_ATTEMPTS)
        assert "not an HTTP answer" in delivery.last_error


class HostileAnswerTests:
    def test_a_nul_in_the_answer_is_recorded_escaped(self):
        """The status line's reason goes into last_error (PostgreSQL text cannot hold NUL)."""
        server = RawServer(b"HTTP/1.1 500 bad\x00reason\r\nContent-Length: 0\r\n\r\n")
        try:
            delivery = attempt(make_delivery("HTTP", server.properties()))
        finally:
            server.close()
        assert (delivery.status, delivery.attempts) == (Status.PENDING, 1)
        assert delivery.last_error.endswith("answered 500 bad\\x00reason")
