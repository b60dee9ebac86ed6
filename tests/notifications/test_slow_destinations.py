"""A destination that accepts connections and never answers delays only its own notifications
(issue 10, item 6): HTTP and MQTT deliveries have separate queues and workers, each HTTP
destination has a concurrency limit and a circuit breaker."""
import time

import pytest
from django.conf import settings
from django.utils import timezone

from notifications.models import NotificationDelivery, NotificationDestination
from tests.concurrency import wait_for
from tests.endpoints import HttpSink, MqttReceiver, SilentTcpServer
from tests.subscriptions.helpers import mqtt_notify, subscribe, subscription_body
from tests.worker import make_workers

pytestmark = pytest.mark.django_db(transaction=True)

Status = NotificationDelivery.Status
SLOW_SUBSCRIBERS = 20
FAST_SUBSCRIBERS = 10


@pytest.fixture
def silent_endpoint():
    server = SilentTcpServer()
    yield server
    server.close()


@pytest.fixture
def fast_receivers(mqtt_broker):
    receivers = [MqttReceiver(*mqtt_broker) for _ in range(FAST_SUBSCRIBERS)]
    yield receivers
    for receiver in receivers:
        receiver.close()


def subscribe_all(api, notifies: list[dict], consumer_prefix: str) -> None:
    for number, notify in enumerate(notifies):
        response = subscribe(api, subscription_body(notify=notify),
                             consumer=f"{consumer_prefix}{number}", query="?trigger=true")
        assert response.status_code == 201, response.content


def assert_all_arrive_before(receivers: list[MqttReceiver], deadline: float) -> None:
    """Each receiver got its notification, received (paho's monotonic reception time)
    before `deadline`, a time.monotonic() value."""
    for receiver in receivers:
        message = receiver.get(timeout=max(0.5, deadline - time.monotonic()))
        assert message.timestamp < deadline, f"{receiver.topic} arrived too late"


class SlowHttpDestinationWithWorkerTests:
    def test_it_delays_only_its_own_notifications(self, api, celery_worker, silent_endpoint,
                                                  fast_receivers):
        slow = {"protocol": "HTTP", "properties": silent_endpoint.properties()}
        subscribe_all(api, [slow] * SLOW_SUBSCRIBERS, "SlowConsumer")
        wait_for(lambda: silent_endpoint.accepted, what="a send to the silent endpoint")
        started = time.monotonic()
        subscribe_all(api, [mqtt_notify(r.topic) for r in fast_receivers], "FastConsumer")

        # Every MQTT notification arrives before a single HTTP request to the silent
        # endpoint could even have timed out.
        assert_all_arrive_before(fast_receivers, started + settings.NOTIFY_HTTP_TIMEOUT_SECONDS)
        slow_rows = NotificationDelivery.objects.filter(protocol="HTTP")
        assert slow_rows.count() == SLOW_SUBSCRIBERS
        assert not slow_rows.exclude(status__in=(Status.PENDING, Status.SENDING)).exists()

        # The silent destination never had more than its limit of requests in flight, and
        # after enough timeouts its breaker opens: its deliveries wait without being sent.
        assert silent_endpoint.most_open <= settings.NOTIFY_DESTINATION_MAX_IN_FLIGHT
        key = f"127.0.0.1:{silent_endpoint.port}"
        wait_for(lambda: NotificationDestination.objects.filter(
            key=key, open_until__gt=timezone.now()).exists(),
            timeout=3 * settings.NOTIFY_HTTP_TIMEOUT_SECONDS, what="the circuit to open")
        wait_for(lambda: slow_rows.filter(last_error__startswith="Circuit open").exists(),
                 timeout=10, what="a delivery deferred by the open circuit")
        accepted = silent_endpoint.accepted
        assert not slow_rows.filter(status=Status.DELIVERED).exists()
        assert accepted < SLOW_SUBSCRIBERS


class SlowHttpDestinationWithoutBrokerTests:
    def test_it_delays_only_its_own_notifications(self, api, settings, silent_endpoint,
                                                  fast_receivers):
        """Without a broker, pushes used to be sent in the thread that queued them (here the
        subscribe request): the first silent endpoint held it, and everything after it."""
        settings.CELERY_TASK_ALWAYS_EAGER = True
        started = time.monotonic()
        slow = {"protocol": "HTTP", "properties": silent_endpoint.properties()}
        subscribe_all(api, [slow] * SLOW_SUBSCRIBERS, "SlowConsumer")
        subscribe_all(api, [mqtt_notify(r.topic) for r in fast_receivers], "FastConsumer")

        assert_all_arrive_before(fast_receivers, started + settings.NOTIFY_HTTP_TIMEOUT_SECONDS)
        slow_rows = NotificationDelivery.objects.filter(protocol="HTTP")
        assert slow_rows.count() == SLOW_SUBSCRIBERS
        assert not slow_rows.exclude(status__in=(Status.PENDING, Status.SENDING)).exists()
        assert silent_endpoint.accepted >= 1
        assert silent_endpoint.most_open <= settings.NOTIFY_DESTINATION_MAX_IN_FLIGHT


ANSWERING_SUBSCRIBERS = 5
DRIPPING_DESTINATIONS = 6
LANE = 2  # NOTIFY_HTTP_UNPROVEN_MAX_IN_FLIGHT of the workers below (4 HTTP threads each)


@pytest.fixture
def lane_workers(tmp_path):
    with make_workers(tmp_path, NOTIFY_HTTP_UNPROVEN_MAX_IN_FLIGHT=str(LANE)) as log:
        yield log


class ManySlowHttpDestinationsTests:
    def test_destinations_that_answer_keep_their_threads(self, api, lane_workers):
        """Six destinations that answer `200 OK` and then drip their head (each read within
        the read timeout, every attempt held to its deadline) against four sending threads:
        the subscribers that answer get their next push in seconds, not after the
        drippers' 12 s attempts."""
        sinks = [HttpSink() for _ in range(ANSWERING_SUBSCRIBERS)]
        drippers = [SilentTcpServer(drip=0.5) for _ in range(DRIPPING_DESTINATIONS)]
        try:
            answering = [{"protocol": "HTTP", "properties": sink.properties()} for sink in sinks]
            subscribe_all(api, answering, "AnsweringConsumer")
            wait_for(lambda: all(sink.requests for sink in sinks), timeout=20,
                     what="the first pushes to the answering subscribers")

            subscribe_all(api, [{"protocol": "HTTP", "properties": d.properties()}
                                for d in drippers], "DrippingConsumer")
            wait_for(lambda: sum(d.open for d in drippers) >= LANE, timeout=20,
                     what="sends held by dripping destinations")
            started, held = time.monotonic(), []
            for number, notify in enumerate(answering):  # the same subscriptions, pushed again
                response = subscribe(api, subscription_body(notify=notify),
                                     consumer=f"AnsweringConsumer{number}", query="?trigger=true")
                assert response.status_code == 200, response.content

            def second_pushes_arrived() -> bool:
                held.append(sum(d.open for d in drippers))
                return all(len(sink.requests) == 2 for sink in sinks)

            wait_for(second_pushes_arrived, timeout=30,
                     what="the second pushes to the answering subscribers")
            took = time.monotonic() - started
        finally:
            for server in [*sinks, *drippers]:
                server.close()
        assert took < 6, f"the answering subscribers waited {took:.1f} s"
        assert max(held) <= LANE  # sends to the drippers at once, all along
