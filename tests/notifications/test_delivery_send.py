"""delivery_send: one claimed attempt and its recorded outcome, against real endpoints."""
import json
from datetime import timedelta

import pytest
from django.utils import timezone

from notifications import services
from notifications.models import NotificationDelivery
from notifications.services import delivery_send, retry_delay_seconds
from tests.concurrency import run_together
from tests.endpoints import BODY, make_delivery
from tests.ports import reserved_port

pytestmark = pytest.mark.django_db

Status = NotificationDelivery.Status


class DeliverySendMqttTests:
    def test_it_publishes_the_payload_and_records_the_delivery(self, mqtt_receiver):
        delivery = make_delivery("MQTT", {"topic": mqtt_receiver.topic})
        assert delivery_send(delivery.id) == Status.DELIVERED
        message = mqtt_receiver.get()
        assert json.loads(message.payload) == BODY
        assert message.qos == 1
        delivery.refresh_from_db()
        assert (delivery.status, delivery.attempts) == (Status.DELIVERED, 1)
        assert delivery.last_error == ""
        assert delivery.delivered_at is not None

    def test_it_retries_later_when_the_broker_is_unreachable(self, settings):
        settings.MQTT_BROKER_URL = f"mqtt://127.0.0.1:{reserved_port()}"
        settings.NOTIFICATION_RETRY_BASE_SECONDS = 3
        delivery = make_delivery("MQTT", {"topic": "test/unreachable"})
        before = timezone.now()
        assert delivery_send(delivery.id) == Status.PENDING
        delivery.refresh_from_db()
        assert (delivery.status, delivery.attempts) == (Status.PENDING, 1)
        assert "127.0.0.1" in delivery.last_error
        assert before + timedelta(seconds=3) <= delivery.next_attempt_at
        assert delivery.next_attempt_at <= timezone.now() + timedelta(seconds=3)

    def test_it_fails_permanently_when_mqtt_is_not_configured(self, settings):
        settings.MQTT_BROKER_URL = ""
        delivery = make_delivery("MQTT", {"topic": "test/unconfigured"})
        assert delivery_send(delivery.id) == Status.FAILED
        delivery.refresh_from_db()
        assert (delivery.last_error, delivery.attempts) == ("MQTT is not configured", 1)


class DeliverySendHttpTests:
    def test_it_sends_method_path_headers_and_body(self, http_sink):
        delivery = make_delivery("HTTP", http_sink.properties(method="PATCH", path="/cb"))
        assert delivery_send(str(delivery.id)) == Status.DELIVERED
        [request] = http_sink.requests
        assert (request.method, request.path, request.json()) == ("PATCH", "/cb", BODY)
        assert request.headers["content-type"] == "application/json"
        assert "authorization" not in request.headers

    def test_it_retries_a_server_error_with_growing_backoff(self, settings, http_sink):
        settings.NOTIFICATION_RETRY_BASE_SECONDS = 2
        settings.NOTIFICATION_RETRY_MAX_SECONDS = 5
        http_sink.status = 500
        delivery = make_delivery("HTTP", http_sink.properties())
        waits = []
        for _ in range(3):
            started = timezone.now()
            assert delivery_send(delivery.id) == Status.PENDING
            delivery.refresh_from_db()
            waits.append((delivery.next_attempt_at - started).total_seconds())
            delivery.next_attempt_at = timezone.now()
            delivery.save(update_fields=["next_attempt_at"])
        assert [round(wait) for wait in waits] == [2, 4, 5]
        assert delivery.attempts == 3 and "500" in delivery.last_error
        http_sink.status = 200
        assert delivery_send(delivery.id) == Status.DELIVERED
        assert len(http_sink.requests) == 4

    def test_it_fails_permanently_on_404(self, http_sink):
        http_sink.status = 404
        delivery = make_delivery("HTTP", http_sink.properties())
        assert delivery_send(delivery.id) == Status.FAILED
        delivery.refresh_from_db()
        assert delivery.attempts == 1 and "404" in delivery.last_error
        assert delivery_send(delivery.id) == Status.FAILED
        assert len(http_sink.requests) == 1


class DeliverySendClaimTests:
    def test_it_fails_an_expired_delivery_without_sending(self, http_sink):
        delivery = make_delivery("HTTP", http_sink.properties(),
                                 expires_at=timezone.now() - timedelta(seconds=1))
        assert delivery_send(delivery.id) == Status.FAILED
        delivery.refresh_from_db()
        assert (delivery.last_error, delivery.attempts) == ("Subscription expired", 0)
        assert http_sink.requests == []

    def test_it_does_not_send_before_the_next_attempt_is_due(self, http_sink):
        delivery = make_delivery("HTTP", http_sink.properties(),
                                 next_attempt_at=timezone.now() + timedelta(minutes=1))
        assert delivery_send(delivery.id) == Status.PENDING
        assert http_sink.requests == []

    @pytest.mark.parametrize("status", [Status.DELIVERED, Status.SENDING, Status.CANCELLED])
    def test_it_leaves_deliveries_that_are_not_pending_alone(self, http_sink, status):
        delivery = make_delivery("HTTP", http_sink.properties(), status=status)
        assert delivery_send(delivery.id) == status
        assert http_sink.requests == []

    @pytest.mark.parametrize("delivery_id", ["5f0c2a4e-6a0b-4c43-9d4b-3a1e0f2b7c11", "nonsense"])
    def test_it_returns_quietly_for_a_missing_delivery(self, delivery_id):
        assert delivery_send(delivery_id) == "MISSING"

    def test_it_does_not_retry_when_a_newer_notification_exists(self, http_sink, monkeypatch):
        # The newer notification arrives while the older one is being sent (so the check
        # before sending lets the older one through); the send then fails transiently (a real
        # 503), and retrying would deliver the outdated result last.
        http_sink.status = 503
        older = make_delivery("HTTP", http_sink.properties())
        send, newer = services.http_send, []

        def newer_arrives_while_sending(**kwargs):
            newer.append(make_delivery("HTTP", http_sink.properties(),
                                       subscription_id=older.subscription_id,
                                       created_at=older.created_at + timedelta(seconds=1)))
            send(**kwargs)

        monkeypatch.setattr(services, "http_send", newer_arrives_while_sending)
        assert delivery_send(older.id) == Status.CANCELLED
        assert len(http_sink.requests) == 1  # it was sent: the transient failure is real
        older.refresh_from_db()
        assert (older.status, older.attempts) == (Status.CANCELLED, 1)
        assert older.last_error.startswith("Superseded by a newer notification (")
        assert "503" in older.last_error
        newer[0].refresh_from_db()
        assert (newer[0].status, newer[0].attempts) == (Status.PENDING, 0)


@pytest.mark.django_db(transaction=True)
class DeliverySendConcurrencyTests:
    def test_it_sends_once_when_two_workers_claim_the_same_delivery(self, http_sink):
        http_sink.delay = 0.3  # the first send is still in flight when the second one tries
        delivery = make_delivery("HTTP", http_sink.properties())
        results = run_together(*[lambda: delivery_send(delivery.id)] * 2)
        assert len(http_sink.requests) == 1
        assert sorted(results) == [Status.DELIVERED, Status.SENDING]
        delivery.refresh_from_db()
        assert (delivery.status, delivery.attempts) == (Status.DELIVERED, 1)


class RetryDelayTests:
    def test_it_doubles_from_the_base_up_to_the_max(self, settings):
        settings.NOTIFICATION_RETRY_BASE_SECONDS = 2
        settings.NOTIFICATION_RETRY_MAX_SECONDS = 300
        assert [retry_delay_seconds(attempts=n) for n in (1, 2, 3, 8, 9, 50)] == \
            [2, 4, 8, 256, 300, 300]


class DeliveryOrderTests:
    def test_it_never_sends_a_delivery_a_newer_one_replaced(self, http_sink):
        older = make_delivery("HTTP", http_sink.properties())
        make_delivery("HTTP", http_sink.properties(), subscription_id=older.subscription_id,
                      created_at=older.created_at + timedelta(seconds=1))
        assert delivery_send(older.id) == "CANCELLED"
        assert http_sink.requests == []

    def test_it_waits_while_an_older_delivery_is_being_sent(self, http_sink):
        older = make_delivery("HTTP", http_sink.properties(), status="SENDING",
                              claimed_at=timezone.now())
        newer = make_delivery("HTTP", http_sink.properties(),
                              subscription_id=older.subscription_id,
                              created_at=older.created_at + timedelta(seconds=1))
        assert delivery_send(newer.id) == "PENDING"
        assert http_sink.requests == []
        newer.refresh_from_db()
        assert newer.attempts == 0 and newer.next_attempt_at > timezone.now()
