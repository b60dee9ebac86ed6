"""The MQTT interface's process (`make mqtt-api`, issue 16; docs/mqtt-api.md "Running it" and
"Who is answered, and where"): subscribed to every operation's topic (shared between processes
with MQTT_API_SHARE_GROUP), it answers each request on its response topic
(mqtt_api/front_door.py) from MQTT_API_THREADS threads. Bad input never stops the loop: a
message too large or not a template is logged and dropped, an operation that fails unexpectedly
is answered with a 500, and beyond MQTT_API_QUEUE or MQTT_API_BUDGET_BYTES (api.body_budget) a
request is refused at once with a 503.
"""
import logging
import queue
import threading
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from paho.mqtt.client import Client, MQTTMessage

from api.body_budget import BodyBudget, busy_message
from api.requests_in_progress import request_in_progress
from mqtt_api.front_door import Answer, answer, error_answer
from mqtt_api.messages import TemplateError, parse_request, response_bytes
from mqtt_api.operations import served_topics
from mqtt_api.response_topics import answer_refusal
from notifications.mqtt_broker import broker_address, mqtt_client

logger = logging.getLogger(__name__)

# Above this a message is dropped unread: the HTTP body limit plus room for the template.
TEMPLATE_OVERHEAD_BYTES = 64 * 1024


@dataclass(frozen=True)
class _Received:
    topic: str
    payload: bytes


def request_topics() -> list[str]:
    """The topics to subscribe: every operation's the strategy serves, shared when a share
    group is set."""
    topics = [settings.MQTT_API_BASE_TOPIC + name for name in served_topics()]
    group = settings.MQTT_API_SHARE_GROUP
    return [f"$share/{group}/{topic}" for topic in topics] if group else topics


class MqttApiServer:
    def __init__(self) -> None:
        if settings.MQTT_API_BUDGET_BYTES < _largest_request():
            raise ImproperlyConfigured(
                f"MQTT_API_BUDGET_BYTES must be at least {_largest_request()} (the largest "
                "request: MAX_REQUEST_BODY_BYTES and room for the template)")
        # The payloads of the requests waiting and being answered.
        self._budget = BodyBudget(settings.MQTT_API_BUDGET_BYTES)
        self._queue: queue.Queue[_Received | None] = queue.Queue(settings.MQTT_API_QUEUE)
        self._threads = [threading.Thread(target=self._work, name=f"mqtt-api-{n}", daemon=True)
                         for n in range(settings.MQTT_API_THREADS)]
        self._client: Client = mqtt_client(broker_address(settings.MQTT_BROKER_URL))
        self._client.reconnect_delay_set(min_delay=1, max_delay=30)
        self._client.on_connect = self._on_connect
        self._client.on_subscribe = self._on_subscribe
        self._client.on_message = self._on_message
        self._answers, self._answers_lock = 0, threading.Lock()  # shared by the workers

    def serve_forever(self) -> None:
        """Connect (retrying while the broker is away) and answer until stop()."""
        for thread in self._threads:
            thread.start()
        broker = broker_address(settings.MQTT_BROKER_URL)
        self._client.connect_async(broker.host, broker.port, keepalive=30)
        self._client.loop_forever(retry_first_connection=True)
        for _ in self._threads:
            self._queue.put(None)
        for thread in self._threads:
            thread.join(timeout=settings.MQTT_TIMEOUT_SECONDS)
        logger.info("MQTT interface: stopped (%d answers published)", self._answers)

    def stop(self) -> None:
        self._client.disconnect()

    def _on_connect(self, client: Client, userdata: object, flags: object, reason: object,
                    properties: object = None) -> None:
        if getattr(reason, "is_failure", False):
            logger.warning("MQTT interface: the broker refused the connection: %s", reason)
            return
        client.subscribe([(topic, 1) for topic in request_topics()])
        logger.info("MQTT interface: connected, subscribing %d operation topics under %s",
                    len(served_topics()), settings.MQTT_API_BASE_TOPIC)

    def _on_subscribe(self, *args: object) -> None:
        logger.info("MQTT interface: ready (operation topics subscribed)")

    def _on_message(self, client: Client, userdata: object, message: MQTTMessage) -> None:
        """On paho's network thread: only hand over (or refuse at once when full)."""
        limit, size = _largest_request(), len(message.payload)
        if size > limit:
            logger.warning("MQTT interface: dropped a request of %d bytes on %s (at most %d)",
                           size, message.topic, limit)
            return
        # A shared subscription delivers the plain topic; some brokers keep the share prefix.
        topic = message.topic
        received = _Received(topic.split("/", 2)[2] if topic.startswith("$share/") else topic,
                             bytes(message.payload))
        if not self._budget.reserve(size):
            logger.warning("MQTT interface: refused a request of %d bytes on %s: %d bytes of "
                           "requests in flight (MQTT_API_BUDGET_BYTES %d)", size, message.topic,
                           self._budget.held, self._budget.total)
            self._respond(received, lambda topic: error_answer(503, busy_message(
                f"at most {self._budget.total} bytes per MQTT interface process"), topic))
            return
        try:
            self._queue.put_nowait(received)
        except queue.Full:
            self._budget.release(size)
            self._respond(received, lambda topic: error_answer(
                503, "The MQTT interface has too many requests waiting; try again", topic))

    def _work(self) -> None:
        while (received := self._queue.get()) is not None:
            try:
                with request_in_progress():  # the snapshot freezes between requests
                    self._respond(received, None)
            except Exception:  # noqa: BLE001 - one request must not stop the thread
                logger.exception("MQTT interface: answering a request on %s failed",
                                 received.topic)
            finally:
                size = len(received.payload)
                del received  # the payload is freed before the budget (and memory) is given back
                self._budget.release(size)

    def _respond(self, received: _Received, refusal) -> None:
        try:
            request = parse_request(received.payload)
        except TemplateError as error:  # who sent it is unknown: nobody to answer
            logger.warning("MQTT interface: dropped a message on %s: %s", received.topic, error)
            return
        if refusal is not None:
            reply = refusal(received.topic)
        else:
            try:
                reply = answer(received.topic, request)
            except Exception as error:  # noqa: BLE001 - answered, and logged
                logger.exception("MQTT interface: %s failed", received.topic)
                reply = error_answer(500, f"Unexpected error: {type(error).__name__}",
                                     received.topic)
        refused = answer_refusal(request, reply)
        if refused is not None:
            logger.warning("MQTT interface: %s answered %d (traceId %r), not published: %s",
                           received.topic, reply.status, request.trace_id, refused)
            return
        self._publish(request.response_topic, request.qos, request.trace_id, reply)

    def _publish(self, topic: str, qos: int, trace_id: str | None, reply: Answer) -> None:
        self._client.publish(topic, response_bytes(status=reply.status, trace_id=trace_id,
                                                   receiver=reply.receiver,
                                                   payload=reply.payload), qos=qos)
        with self._answers_lock:
            self._answers += 1


def _largest_request() -> int:
    """Above this a message is dropped unread."""
    return settings.MAX_REQUEST_BODY_BYTES + TEMPLATE_OVERHEAD_BYTES
