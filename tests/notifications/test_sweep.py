"""The sweeper: what a lost task, a dead worker or a broker outage left behind is delivered."""
import json
import uuid
from datetime import timedelta

import pytest
from celery.signals import task_prerun
from django.utils import timezone

from notifications import handover
from notifications.models import NotificationDelivery
from notifications.services import delivery_send
from notifications.sweeping import deliveries_sweep
from notifications.tasks import sweep_task
from tests.concurrency import wait_for
from tests.endpoints import BODY, MqttReceiver, make_delivery, mosquitto
from tests.ports import reserved_port

pytestmark = pytest.mark.django_db

Status = NotificationDelivery.Status


class DeliveriesSweepTests:
    def test_it_sends_overdue_deliveries_and_leaves_the_others(self, settings, http_sink):
        """With a broker, a row due for a whole sweep interval lost its task; a row due just
        now still has its own task coming, and a later one is not due."""
        settings.NOTIFICATION_SWEEP_INTERVAL_SECONDS = 5
        now = timezone.now()
        overdue = make_delivery("HTTP", http_sink.properties(path="/overdue"),
                                next_attempt_at=now - timedelta(seconds=6))
        just_due = make_delivery("HTTP", http_sink.properties(path="/just-due"))
        later = make_delivery("HTTP", http_sink.properties(path="/later"),
                              next_attempt_at=now + timedelta(minutes=1))
        assert deliveries_sweep() == 1
        assert [request.path for request in http_sink.requests] == ["/overdue"]
        statuses = dict(NotificationDelivery.objects.values_list("id", "status"))
        assert statuses == {overdue.id: Status.DELIVERED, just_due.id: Status.PENDING,
                            later.id: Status.PENDING}

    def test_it_resends_a_delivery_whose_worker_stopped_renewing_its_claim(self, settings,
                                                                           http_sink):
        settings.NOTIFICATION_SENDING_LEASE_SECONDS = 6
        now = timezone.now()
        stale = make_delivery("HTTP", http_sink.properties(path="/stale"), status=Status.SENDING,
                              claimed_at=now - timedelta(minutes=5),
                              heartbeat_at=now - timedelta(seconds=7))
        in_flight = make_delivery("HTTP", http_sink.properties(path="/in-flight"),
                                  status=Status.SENDING, claimed_at=now - timedelta(minutes=5),
                                  heartbeat_at=now - timedelta(seconds=1))
        assert sweep_task.apply().get() == 1
        assert [request.path for request in http_sink.requests] == ["/stale"]
        stale.refresh_from_db()
        in_flight.refresh_from_db()
        assert (stale.status, stale.attempts, stale.last_error) == (Status.DELIVERED, 2, "")
        assert in_flight.status == Status.SENDING

    def test_it_hands_overdue_mqtt_deliveries_over_a_batch_task_per_delivery_batch(
            self, settings, mqtt_broker, monkeypatch):
        settings.NOTIFICATION_SWEEP_INTERVAL_SECONDS = 5
        monkeypatch.setattr(handover, "DELIVERY_BATCH", 100)  # 250 rows: three tasks
        overdue = timezone.now() - timedelta(seconds=6)
        prefix = f"test/{uuid.uuid4().hex}"
        topics = [f"{prefix}/{n}" for n in range(250)]
        for topic in topics:
            make_delivery("MQTT", {"topic": topic}, next_attempt_at=overdue)
        tasks = []

        def count(sender=None, **kwargs) -> None:
            tasks.append((sender.name, len(kwargs["args"][0]) if kwargs["args"] else 0))

        receiver = MqttReceiver(*mqtt_broker, topic=f"{prefix}/#")
        task_prerun.connect(count)
        try:
            assert deliveries_sweep() == 250
            arrived = sorted(receiver.get().topic for _ in topics)
        finally:
            task_prerun.disconnect(count)
            receiver.close()
        assert sorted(tasks) == [("notifications.deliver_batch", 50)] + \
            [("notifications.deliver_batch", 100)] * 2
        assert arrived == sorted(topics)
        assert set(NotificationDelivery.objects.values_list("status", flat=True)) == \
            {Status.DELIVERED}

    def test_it_fails_expired_deliveries_instead_of_sending(self, http_sink):
        expired = make_delivery("HTTP", http_sink.properties(),
                                next_attempt_at=timezone.now() - timedelta(minutes=1),
                                expires_at=timezone.now() - timedelta(seconds=1))
        deliveries_sweep()
        expired.refresh_from_db()
        assert (expired.status, expired.last_error) == (Status.FAILED, "Subscription expired")
        assert http_sink.requests == []


@pytest.mark.django_db(transaction=True)
class SweepWithoutBrokerTests:
    def test_it_sends_every_due_delivery_without_a_broker(self, settings, http_sink):
        settings.CELERY_TASK_ALWAYS_EAGER = True
        due = make_delivery("HTTP", http_sink.properties(path="/due"))
        assert deliveries_sweep() == 1
        wait_for(lambda: http_sink.requests, what="the in-process pool to send it")
        assert [request.path for request in http_sink.requests] == ["/due"]
        wait_for(lambda: NotificationDelivery.objects.get(id=due.id).status == Status.DELIVERED,
                 what="the delivery recorded")


class BrokerOutageTests:
    def test_it_delivers_once_the_broker_is_back(self, settings):
        """The broker is down at the first attempt; a real Mosquitto then starts on its port
        and the sweep delivers the retry."""
        port = reserved_port()
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
                    next_attempt_at=timezone.now() - timedelta(minutes=1))
                assert deliveries_sweep() == 1
                message = receiver.get()
            finally:
                receiver.close()
        assert json.loads(message.payload) == BODY and message.qos == 1
        delivery.refresh_from_db()
        assert (delivery.status, delivery.attempts, delivery.last_error) == \
            (Status.DELIVERED, 2, "")
