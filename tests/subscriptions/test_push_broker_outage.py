"""Push through a broker outage of a minute, end to end (issue 15): subscriptions made through
the API, changes evaluated and sent by a real Celery worker over the real Redis, and a real
Mosquitto that is stopped for OUTAGE_SECONDS while the results change twice and then started
again. Every subscriber must end with its latest result, received at least once, and never
an older one after it.

The broker keeps its sessions on disk (as a production broker does), so the subscribers'
receiver, a persistent session, misses nothing it was sent while it reconnects."""
import contextlib
import json
import threading
import time
import uuid
from collections import defaultdict

import pytest
from paho.mqtt.client import Client, MQTTMessage
from paho.mqtt.enums import CallbackAPIVersion

from config.celery import app as celery_app
from notifications.models import NotificationDelivery
from tests import services
from tests.concurrency import wait_for
from tests.endpoints import broker_state_directory, mosquitto
from tests.ports import reserved_port
from tests.factories import make_instances, make_rules
from tests.store.helpers import instance_body
from tests.subscriptions.helpers import mqtt_notify, subscribe, subscription_body
from tests.worker import forget_queues, start_worker, stop_worker, worker_environment

pytestmark = pytest.mark.django_db(transaction=True)

OUTAGE_SECONDS = 60
SUBSCRIBERS = 30
SHARED = "Shared|temperatureInfo|1.0.0"


class PersistentReceiver:
    """A persistent MQTT session (clean session off, QoS 1) on every subscriber's topic: the
    broker queues what is published for it while it reconnects, also across the broker's
    restart. Records (topic, value of metadata "v") in arrival order."""

    def __init__(self, port: int, prefix: str) -> None:
        self.arrivals: list[tuple[str, int]] = []
        self._lock = threading.Lock()
        self._prefix = prefix
        self._client = Client(callback_api_version=CallbackAPIVersion.VERSION2,
                              client_id=f"outage-receiver-{uuid.uuid4().hex[:8]}",
                              clean_session=False)
        self._client.reconnect_delay_set(min_delay=1, max_delay=1)
        subscribed = threading.Event()
        self._client.on_subscribe = lambda *args: subscribed.set()
        self._client.on_message = self._on_message
        self._client.connect("127.0.0.1", port)
        self._client.subscribe(f"{prefix}/#", qos=1)
        self._client.loop_start()
        assert subscribed.wait(10), "no SUBACK from the outage test's broker"

    def _on_message(self, client: Client, userdata: object, message: MQTTMessage) -> None:
        body = json.loads(message.payload)
        value = body["payload"]["results"][0]["metadata"]["v"]
        with self._lock:
            self.arrivals.append((message.topic, value))

    def by_topic(self) -> dict[str, list[int]]:
        with self._lock:
            seen = defaultdict(list)
            for topic, value in self.arrivals:
                seen[topic].append(value)
        return dict(seen)

    def close(self) -> None:
        self._client.disconnect()
        self._client.loop_stop()


@pytest.fixture
def outage_setup(tmp_path, django_db_blocker, settings):
    """A broker of its own (its state directory), a worker sending to it, and this process
    subscribing against it."""
    services.require_redis(settings.CELERY_BROKER_URL)
    port = reserved_port()
    settings.MQTT_BROKER_URL = f"mqtt://127.0.0.1:{port}"
    queue = f"so-test-outage-{uuid.uuid4().hex[:8]}"
    with django_db_blocker.unblock():
        env = worker_environment(queue, MQTT_BROKER_URL=settings.MQTT_BROKER_URL,
                                 NOTIFICATION_RETRY_MAX_SECONDS="8")
    worker = start_worker("outage", [queue, f"{queue}.mqtt"], env, tmp_path / "worker.log")
    previous = (celery_app.conf.task_default_queue, celery_app.conf.task_always_eager)
    celery_app.conf.task_default_queue, celery_app.conf.task_always_eager = queue, False
    try:
        with broker_state_directory() as state:
            yield port, state, tmp_path / "worker.log"
    finally:
        celery_app.conf.task_default_queue, celery_app.conf.task_always_eager = previous
        stop_worker(worker)
        forget_queues(queue, f"{queue}.mqtt", f"{queue}.http")


def _change(value: int) -> None:
    make_instances(instance_body("Shared", metadata={"v": value}))


class BrokerOutageTests:
    def test_every_subscriber_gets_its_latest_result_after_a_minute_without_broker(
            self, api, outage_setup):
        port, state, log = outage_setup
        prefix = f"test/outage/{uuid.uuid4().hex}"
        topics = {f"{prefix}/{n}" for n in range(SUBSCRIBERS)}
        with contextlib.ExitStack() as cleanup:
            with mosquitto(port, persistence=state):
                receiver = PersistentReceiver(port, prefix)
                cleanup.callback(receiver.close)
                _change(1)
                make_rules(*[(f"Car{n}", SHARED, 1) for n in range(SUBSCRIBERS)])
                for n in range(SUBSCRIBERS):
                    body = subscription_body(notify=mqtt_notify(f"{prefix}/{n}"))
                    answer = subscribe(api, body, consumer=f"Car{n}", query="?trigger=true")
                    assert answer.status_code == 201, answer.content
                wait_for(lambda: set(receiver.by_topic()) == topics, what="every first result")

            stopped = time.monotonic()
            _change(2)  # evaluated and sent while the broker is down: fails, retried
            wait_for(lambda: NotificationDelivery.objects.filter(attempts__gte=1,
                                                                 status="PENDING").exists(),
                     what="a failed attempt during the outage")
            time.sleep(OUTAGE_SECONDS / 2)
            _change(3)  # the latest result, also created during the outage
            time.sleep(max(0.0, OUTAGE_SECONDS - (time.monotonic() - stopped)))

            with mosquitto(port, persistence=state):
                _wait_for_latest(receiver, log)
                wait_for(lambda: not NotificationDelivery.objects.filter(
                    status__in=("PENDING", "SENDING")).exists(), what="the outbox settled")
        arrived = receiver.by_topic()
        assert set(arrived) == topics
        for topic, values in arrived.items():
            assert values[0] == 1 and values[-1] == 3, (topic, values)
            assert values == sorted(values), (topic, values)  # never an older one after
        assert set(NotificationDelivery.objects.values_list("status", flat=True)) <= {
            "DELIVERED", "CANCELLED"}
        # The latest results were tried during the outage and delivered after it, retried
        # together as they had failed together (no send task of a single delivery).
        assert NotificationDelivery.objects.filter(
            status="DELIVERED", attempts__gte=2).count() == SUBSCRIBERS
        assert "notifications.deliver_batch[" in log.read_text()
        assert "notifications.deliver[" not in log.read_text()


def _wait_for_latest(receiver: PersistentReceiver, log) -> None:
    try:
        wait_for(lambda: all(values[-1] == 3 for values in receiver.by_topic().values()),
                 timeout=60, what="every subscriber's latest result after the outage")
    except AssertionError as error:
        outbox = list(NotificationDelivery.objects.values_list(
            "receiver", "status", "attempts", "last_error"))
        raise AssertionError(f"{error}; arrived {receiver.by_topic()}; outbox {outbox}; "
                             f"worker log:\n{log.read_text()[-3000:]}") from None
