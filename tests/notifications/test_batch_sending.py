"""deliveries_send: many MQTT deliveries in one attempt each, with the outcomes delivery_send
would record, against the real Mosquitto."""
import json
import queue
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from notifications.services import deliveries_send, deliveries_send_claimed
from notifications.models import NotificationDelivery
from notifications.outbox import deliveries_cancel
from tests.endpoints import MqttReceiver, make_delivery, mosquitto
from tests.ports import reserved_port

pytestmark = pytest.mark.django_db

Status = NotificationDelivery.Status


def _statuses(*deliveries) -> list[tuple[str, int]]:
    for delivery in deliveries:
        delivery.refresh_from_db()
    return [(delivery.status, delivery.attempts) for delivery in deliveries]


class BatchSendingTests:
    def test_it_publishes_each_payload_and_records_them_delivered(self, mqtt_receiver):
        deliveries = [make_delivery("MQTT", {"topic": mqtt_receiver.topic},
                                    payload={"n": n}) for n in range(5)]
        statuses = deliveries_send([d.id for d in deliveries])
        assert statuses == {d.id: Status.DELIVERED for d in deliveries}
        assert sorted(json.loads(mqtt_receiver.get().payload)["n"] for _ in range(5)) == [
            0, 1, 2, 3, 4]
        assert _statuses(*deliveries) == [(Status.DELIVERED, 1)] * 5
        assert all(d.delivered_at and d.last_error == "" for d in deliveries)

    def test_it_sends_only_what_it_claims(self, mqtt_receiver):
        due = make_delivery("MQTT", {"topic": mqtt_receiver.topic})
        later = make_delivery("MQTT", {"topic": mqtt_receiver.topic},
                              next_attempt_at=timezone.now() + timedelta(hours=1))
        taken = make_delivery("MQTT", {"topic": mqtt_receiver.topic}, status=Status.SENDING,
                              claimed_at=timezone.now())
        statuses = deliveries_send([due.id, later.id, taken.id, "not-a-uuid", uuid.uuid4()])
        assert statuses == {due.id: Status.DELIVERED}
        assert _statuses(later, taken) == [(Status.PENDING, 0), (Status.SENDING, 0)]

    def test_http_ones_go_each_through_their_destination(self, mqtt_receiver, http_sink,
                                                          settings):
        """Sent one by one, each admitted by its destination's limit (deferred, not
        attempted, when it has its sends in flight)."""
        settings.NOTIFY_DESTINATION_MAX_IN_FLIGHT = 1
        mqtt = make_delivery("MQTT", {"topic": mqtt_receiver.topic})
        first, second = (make_delivery("HTTP", http_sink.properties()) for _ in range(2))
        make_delivery("HTTP", http_sink.properties(), status=Status.SENDING,
                      claimed_at=timezone.now())  # the destination's one send in flight
        statuses = deliveries_send([mqtt.id, first.id, second.id])
        assert statuses == {mqtt.id: Status.DELIVERED, first.id: Status.PENDING,
                            second.id: Status.PENDING}
        assert _statuses(first, second) == [(Status.PENDING, 0), (Status.PENDING, 0)]
        assert http_sink.requests == []

    def test_an_outdated_or_expired_one_is_not_sent(self, mqtt_receiver):
        subscription = uuid.uuid4()
        now = timezone.now()
        older = make_delivery("MQTT", {"topic": mqtt_receiver.topic}, payload={"v": 1},
                              subscription_id=subscription, created_at=now)
        newer = make_delivery("MQTT", {"topic": mqtt_receiver.topic}, payload={"v": 2},
                              subscription_id=subscription,
                              created_at=now + timedelta(milliseconds=1))
        expired = make_delivery("MQTT", {"topic": mqtt_receiver.topic},
                                expires_at=now - timedelta(seconds=1))
        statuses = deliveries_send([older.id, newer.id, expired.id])
        assert statuses == {older.id: Status.CANCELLED, newer.id: Status.DELIVERED,
                            expired.id: Status.FAILED}
        assert json.loads(mqtt_receiver.get().payload) == {"v": 2}
        with pytest.raises(queue.Empty):  # the older one and the expired one: never sent
            mqtt_receiver.get(timeout=0.5)

    def test_it_waits_for_an_older_one_still_being_sent(self, mqtt_receiver):
        subscription = uuid.uuid4()
        now = timezone.now()
        make_delivery("MQTT", {"topic": mqtt_receiver.topic}, subscription_id=subscription,
                      status=Status.SENDING, claimed_at=now, created_at=now)
        waiting = make_delivery("MQTT", {"topic": mqtt_receiver.topic},
                                subscription_id=subscription,
                                created_at=now + timedelta(milliseconds=1))
        assert deliveries_send([waiting.id]) == {waiting.id: Status.PENDING}
        waiting.refresh_from_db()
        assert waiting.attempts == 0 and "older notification" in waiting.last_error

    def test_an_unreachable_broker_leaves_them_due_later(self, settings):
        settings.MQTT_BROKER_URL = f"mqtt://127.0.0.1:{reserved_port()}"
        settings.NOTIFICATION_RETRY_BASE_SECONDS = 3
        deliveries = [make_delivery("MQTT", {"topic": f"test/unreachable/{n}"})
                      for n in range(3)]
        before = timezone.now()
        assert deliveries_send([d.id for d in deliveries]) == {
            d.id: Status.PENDING for d in deliveries}
        assert _statuses(*deliveries) == [(Status.PENDING, 1)] * 3
        assert all(d.next_attempt_at >= before + timedelta(seconds=3) for d in deliveries)

    def test_failures_with_one_cause_are_one_warning_naming_each_subscriber(self, settings,
                                                                            caplog):
        settings.MQTT_BROKER_URL = f"mqtt://127.0.0.1:{reserved_port()}"
        deliveries = [make_delivery("MQTT", {"topic": f"test/unreachable/{n}"})
                      for n in range(12)]
        with caplog.at_level("WARNING", logger="notifications.services"):
            deliveries_send([d.id for d in deliveries])
        [warning] = [r for r in caplog.records if r.name == "notifications.services"]
        message = warning.getMessage()
        assert message.startswith("12 notification deliveries failed, will be retried: "
                                   "MQTT broker 127.0.0.1:")
        for delivery in deliveries[:10]:
            assert f"subscription {delivery.subscription_id} (consumer " in message
        assert message.endswith(" and 2 more")

    def test_a_bad_topic_fails_alone(self, mqtt_receiver):
        good = make_delivery("MQTT", {"topic": mqtt_receiver.topic})
        bad = make_delivery("MQTT", {"topic": "test/#"})
        assert deliveries_send([good.id, bad.id]) == {good.id: Status.DELIVERED,
                                                       bad.id: Status.FAILED}


class BrokerOutageTests:
    def test_every_subscriber_gets_its_latest_result_once_the_broker_is_back(self, settings):
        """The process's connection is open when the broker goes away; the next batch fails
        (due later), and once a broker is back on the port each subscriber gets its newest
        notification."""
        port = reserved_port()
        settings.MQTT_BROKER_URL = f"mqtt://127.0.0.1:{port}"
        settings.NOTIFICATION_RETRY_BASE_SECONDS = 1
        topic = f"test/{uuid.uuid4().hex}"
        subscriptions = [uuid.uuid4() for _ in range(10)]
        with mosquitto(port):
            receiver = MqttReceiver("127.0.0.1", port, topic=f"{topic}/#")
            try:
                first = [make_delivery("MQTT", {"topic": f"{topic}/{n}"}, payload={"v": 1},
                                       subscription_id=subscription)
                         for n, subscription in enumerate(subscriptions)]
                assert set(deliveries_send([d.id for d in first]).values()) == {
                    Status.DELIVERED}
                assert len([receiver.get() for _ in first]) == 10
            finally:
                receiver.close()
        later = timezone.now() + timedelta(milliseconds=5)
        second = [make_delivery("MQTT", {"topic": f"{topic}/{n}"}, payload={"v": 2},
                                subscription_id=subscription, created_at=later)
                  for n, subscription in enumerate(subscriptions)]
        assert set(deliveries_send([d.id for d in second]).values()) == {Status.PENDING}
        assert _statuses(*second) == [(Status.PENDING, 1)] * 10

        with mosquitto(port):
            receiver = MqttReceiver("127.0.0.1", port, topic=f"{topic}/#")
            try:
                NotificationDelivery.objects.filter(id__in=[d.id for d in second]).update(
                    next_attempt_at=timezone.now())
                assert set(deliveries_send([d.id for d in second]).values()) == {
                    Status.DELIVERED}
                arrived = {message.topic: json.loads(message.payload)
                           for message in (receiver.get() for _ in second)}
                with pytest.raises(queue.Empty):  # nothing twice
                    receiver.get(timeout=0.5)
            finally:
                receiver.close()
        assert arrived == {f"{topic}/{n}": {"v": 2} for n in range(10)}
        assert _statuses(*second) == [(Status.DELIVERED, 2)] * 10


class ClaimedWhenWrittenTests:
    """deliveries_send_claimed: rows written already claimed (a round's, sent by the process
    that wrote them) take the send path after the claim, fenced by their claim time."""

    def test_it_sends_them_without_claiming_again(self, mqtt_receiver):
        claimed_at = timezone.now()
        deliveries = [make_delivery("MQTT", {"topic": mqtt_receiver.topic}, payload={"n": n},
                                    status=Status.SENDING, claimed_at=claimed_at,
                                    heartbeat_at=claimed_at) for n in range(3)]
        statuses = deliveries_send_claimed(deliveries)
        assert statuses == {d.id: Status.DELIVERED for d in deliveries}
        assert sorted(json.loads(mqtt_receiver.get().payload)["n"] for _ in range(3)) == [
            0, 1, 2]
        assert _statuses(*deliveries) == [(Status.DELIVERED, 1)] * 3

    def test_a_late_sender_renews_its_claim_and_skips_what_another_took_over(
            self, mqtt_receiver, settings):
        settings.NOTIFICATION_SENDING_LEASE_SECONDS = 15
        claimed_at = timezone.now() - timedelta(seconds=6)  # more than a third of the lease
        held, taken = (make_delivery("MQTT", {"topic": mqtt_receiver.topic}, payload={"n": n},
                                     status=Status.SENDING, claimed_at=claimed_at,
                                     heartbeat_at=claimed_at) for n in range(2))
        NotificationDelivery.objects.filter(id=taken.id).update(
            claimed_at=timezone.now())  # the sweeper's resend holds it now
        statuses = deliveries_send_claimed([held, taken])
        assert statuses == {held.id: Status.DELIVERED}
        assert json.loads(mqtt_receiver.get().payload)["n"] == 0
        with pytest.raises(queue.Empty):
            mqtt_receiver.get(timeout=0.5)
        assert _statuses(held, taken) == [(Status.DELIVERED, 1), (Status.SENDING, 0)]

    def test_what_was_cancelled_before_its_send_is_not_sent(self, mqtt_receiver):
        claimed_at = timezone.now()
        kept, cancelled = (make_delivery("MQTT", {"topic": mqtt_receiver.topic}, payload={"n": n},
                                         status=Status.SENDING, claimed_at=claimed_at,
                                         heartbeat_at=claimed_at) for n in range(2))
        assert deliveries_cancel(subscription_ids=[cancelled.subscription_id],
                                 reason="Unsubscribed") == 1
        assert deliveries_send_claimed([kept, cancelled]) == {kept.id: Status.DELIVERED}
        assert json.loads(mqtt_receiver.get().payload)["n"] == 0
        with pytest.raises(queue.Empty):
            mqtt_receiver.get(timeout=0.5)
        assert _statuses(kept, cancelled) == [(Status.DELIVERED, 1), (Status.CANCELLED, 0)]
