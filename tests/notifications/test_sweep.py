"""The sweeper: what a lost task, a dead worker or a broker outage left behind is delivered."""
import json
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from notifications.models import NotificationDelivery
from notifications.services import deliveries_sweep, delivery_send
from notifications.tasks import sweep_task
from tests.endpoints import BODY, MqttReceiver, free_port, make_delivery, mosquitto

pytestmark = pytest.mark.django_db

Status = NotificationDelivery.Status


class DeliveriesSweepTests:
    def test_it_sends_due_pending_deliveries_and_leaves_later_ones(self, http_sink):
        due = make_delivery("HTTP", http_sink.properties(path="/due"))
        later = make_delivery("HTTP", http_sink.properties(path="/later"),
                              next_attempt_at=timezone.now() + timedelta(minutes=1))
        assert deliveries_sweep() == 1
        assert [request.path for request in http_sink.requests] == ["/due"]
        due.refresh_from_db()
        later.refresh_from_db()
        assert (due.status, later.status) == (Status.DELIVERED, Status.PENDING)

    def test_it_resends_a_delivery_whose_worker_died_while_sending(self, settings, http_sink):
        settings.NOTIFICATION_SENDING_LEASE_SECONDS = 120
        stale = make_delivery("HTTP", http_sink.properties(path="/stale"), status=Status.SENDING,
                              claimed_at=timezone.now() - timedelta(seconds=121))
        in_flight = make_delivery("HTTP", http_sink.properties(path="/in-flight"),
                                  status=Status.SENDING, claimed_at=timezone.now())
        assert sweep_task.apply().get() == 1
        assert [request.path for request in http_sink.requests] == ["/stale"]
        stale.refresh_from_db()
        in_flight.refresh_from_db()
        assert (stale.status, stale.attempts, stale.last_error) == (Status.DELIVERED, 2, "")
        assert in_flight.status == Status.SENDING

    def test_it_fails_expired_deliveries_instead_of_sending(self, http_sink):
        expired = make_delivery("HTTP", http_sink.properties(),
                                expires_at=timezone.now() - timedelta(seconds=1))
        deliveries_sweep()
        expired.refresh_from_db()
        assert (expired.status, expired.last_error) == (Status.FAILED, "Subscription expired")
        assert http_sink.requests == []


class BrokerOutageTests:
    def test_it_delivers_once_the_broker_is_back(self, settings):
        """The broker is down at the first attempt; a real Mosquitto then starts on its port
        and the sweep delivers the retry."""
        port = free_port()
        settings.MQTT_BROKER_URL = f"mqtt://127.0.0.1:{port}"
        settings.NOTIFICATION_RETRY_BASE_SECONDS = 2
        topic = f"test/{uuid.uuid4().hex}"
        delivery = make_delivery("MQTT", {"topic": topic})

        before = timezone.now()
        assert delivery_send(delivery.id) == Status.PENDING
        delivery.refresh_from_db()
        assert (delivery.attempts, delivery.status) == (1, Status.PENDING)
        assert f"127.0.0.1:{port}" in delivery.last_error
        assert before + timedelta(seconds=2) <= delivery.next_attempt_at <= \
            timezone.now() + timedelta(seconds=2)
        assert deliveries_sweep() == 0  # not due yet

        with mosquitto(port):
            receiver = MqttReceiver("127.0.0.1", port, topic=topic)
            try:
                NotificationDelivery.objects.filter(id=delivery.id).update(
                    next_attempt_at=timezone.now())
                assert deliveries_sweep() == 1
                message = receiver.get()
            finally:
                receiver.close()
        assert json.loads(message.payload) == BODY and message.qos == 1
        delivery.refresh_from_db()
        assert (delivery.status, delivery.attempts, delivery.last_error) == \
            (Status.DELIVERED, 2, "")
