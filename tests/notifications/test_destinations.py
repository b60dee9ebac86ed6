"""Per-destination concurrency limit and circuit breaker of HTTP(S) notifications."""
import socket
import time
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from notifications.destinations import destination_admit
from notifications.http_delivery import http_destination
from notifications.models import NotificationDelivery, NotificationDestination
from notifications.services import delivery_send
from notifications.http_delivery import http_send
from notifications.transport_errors import TransportError
from tests.concurrency import run_together
from tests.endpoints import BODY, SilentTcpServer, make_delivery
from tests.ports import reserved_port
from tests.startup import assert_start_refused

pytestmark = pytest.mark.django_db

Status = NotificationDelivery.Status


def key_of(properties: dict) -> str:
    return http_destination("HTTP", properties)


class ConcurrencyLimitTests:
    def test_it_defers_a_delivery_while_its_destination_has_its_limit_in_flight(
        self, settings, http_sink
    ):
        settings.NOTIFY_DESTINATION_MAX_IN_FLIGHT = 1
        properties = http_sink.properties()
        make_delivery("HTTP", properties, status=Status.SENDING, claimed_at=timezone.now(),
                      heartbeat_at=timezone.now())
        waiting = make_delivery("HTTP", properties)
        before = timezone.now()
        assert delivery_send(waiting.id) == Status.PENDING
        waiting.refresh_from_db()
        assert waiting.attempts == 0 and waiting.claimed_at is None
        assert waiting.last_error.startswith(f"Waiting: 1 sends to {key_of(properties)}")
        assert waiting.next_attempt_at >= before + timedelta(seconds=1)
        assert http_sink.requests == []

    def test_it_does_not_limit_other_destinations_or_mqtt(self, settings, http_sink,
                                                         mqtt_receiver):
        settings.NOTIFY_DESTINATION_MAX_IN_FLIGHT = 1
        busy = {"address": "127.0.0.1", "port": reserved_port(), "method": "POST", "path": "/"}
        make_delivery("HTTP", busy, status=Status.SENDING, claimed_at=timezone.now(),
                      heartbeat_at=timezone.now())
        assert delivery_send(make_delivery("HTTP", http_sink.properties()).id) == \
            Status.DELIVERED
        mqtt = make_delivery("MQTT", {"topic": mqtt_receiver.topic})
        assert mqtt.destination == ""
        assert delivery_send(mqtt.id) == Status.DELIVERED


class CircuitBreakerTests:
    def test_it_opens_after_consecutive_failures_and_defers_without_an_attempt(
        self, settings, http_sink
    ):
        settings.NOTIFY_BREAKER_FAILURES = 2
        settings.NOTIFY_BREAKER_COOLDOWN_SECONDS = 30
        http_sink.status = 503
        properties = http_sink.properties()
        for _ in range(2):
            assert delivery_send(make_delivery("HTTP", properties).id) == Status.PENDING
        breaker = NotificationDestination.objects.get(key=key_of(properties))
        assert breaker.consecutive_failures == 2
        assert breaker.open_until > timezone.now() + timedelta(seconds=29)

        deferred = make_delivery("HTTP", properties)
        assert delivery_send(deferred.id) == Status.PENDING
        deferred.refresh_from_db()
        assert deferred.attempts == 0
        assert deferred.last_error.startswith(f"Circuit open for {key_of(properties)}")
        assert deferred.next_attempt_at == breaker.open_until
        assert len(http_sink.requests) == 2

    def test_it_lets_one_probe_through_after_the_cool_down_and_closes_on_success(
        self, settings, http_sink
    ):
        properties = http_sink.properties()
        key = key_of(properties)
        NotificationDestination.objects.create(
            key=key, consecutive_failures=5, open_until=timezone.now() - timedelta(seconds=1))
        with transaction.atomic():
            assert destination_admit(key=key, now=timezone.now()) is None  # the probe
            assert destination_admit(key=key, now=timezone.now()) is not None  # the others
        NotificationDestination.objects.filter(key=key).update(
            open_until=timezone.now() - timedelta(seconds=1))
        assert delivery_send(make_delivery("HTTP", properties).id) == Status.DELIVERED
        breaker = NotificationDestination.objects.get(key=key)
        assert (breaker.consecutive_failures, breaker.open_until) == (0, None)

    def test_a_permanent_refusal_does_not_count_against_the_destination(self, settings,
                                                                        http_sink):
        settings.NOTIFY_BREAKER_FAILURES = 1
        http_sink.status = 404
        properties = http_sink.properties()
        assert delivery_send(make_delivery("HTTP", properties).id) == Status.FAILED
        assert not NotificationDestination.objects.filter(
            key=key_of(properties), open_until__isnull=False).exists()


class ConnectTimeoutTests:
    def test_a_host_that_does_not_accept_is_given_up_on_after_the_connect_timeout(
        self, settings
    ):
        """A listener whose accept queue is full: the kernel drops further SYNs, so connecting
        hangs. The much longer read timeout does not apply to connecting."""
        settings.NOTIFY_HTTP_CONNECT_TIMEOUT_SECONDS = 1
        settings.NOTIFY_HTTP_TIMEOUT_SECONDS = 30
        listener = socket.create_server(("127.0.0.1", 0), backlog=0)
        port = listener.getsockname()[1]
        fillers = []
        try:
            for _ in range(4):  # fill the accept queue (never accepted)
                filler = socket.socket()
                filler.setblocking(False)
                filler.connect_ex(("127.0.0.1", port))
                fillers.append(filler)
            started = time.monotonic()
            with pytest.raises(TransportError, match="timed out") as error:
                http_send(protocol="HTTP", payload=BODY,
                          properties={"address": "127.0.0.1", "port": port, "path": "/"})
            assert error.value.transient
            assert time.monotonic() - started < settings.NOTIFY_HTTP_TIMEOUT_SECONDS
        finally:
            for filler in fillers:
                filler.close()
            listener.close()


class LeaseSettingTests:
    @pytest.mark.parametrize("value", ["2", "0"])
    def test_a_lease_under_three_seconds_is_refused_at_start_up(self, value):
        assert_start_refused("NOTIFICATION_SENDING_LEASE_SECONDS must be",
                             NOTIFICATION_SENDING_LEASE_SECONDS=value)


@pytest.mark.django_db(transaction=True)
class ConcurrencyLimitAcrossConnectionsTests:
    def test_concurrent_senders_never_exceed_the_limit_of_a_destination(self, settings):
        """Six senders, each with its own database connection (as separate workers have),
        race for one silent destination: the claim under its row lock admits only two."""
        settings.NOTIFY_DESTINATION_MAX_IN_FLIGHT = 2
        settings.NOTIFY_HTTP_TIMEOUT_SECONDS = 2
        server = SilentTcpServer()
        try:
            deliveries = [make_delivery("HTTP", server.properties()) for _ in range(6)]
            results = run_together(*(lambda d=d: delivery_send(d.id) for d in deliveries))
        finally:
            server.close()
        assert server.accepted == 2 and server.most_open <= 2
        assert sorted(results) == ["PENDING"] * 6  # 2 timed out, 4 deferred
        waiting = NotificationDelivery.objects.filter(last_error__startswith="Waiting:")
        assert waiting.count() == 4 and not waiting.filter(attempts__gt=0).exists()
