"""The outbound adapters against a real Mosquitto and a real local HTTP server (no database)."""
import json
import socket
import time

import pytest

from conventions.encoded_json import encoded, encoded_object
from notifications import mqtt_publishing
from notifications.http_delivery import http_url
from notifications.http_delivery import http_send
from notifications.mqtt_broker import broker_address
from notifications.mqtt_publishing import mqtt_publish_many
from notifications.transport_errors import TransportError
from tests.concurrency import Background, wait_until
from tests.endpoints import BODY, SilentTcpServer
from tests.ports import reserved_port


def publish(topic, payload):
    """One message through the MQTT adapter, raising its TransportError."""
    [error] = mqtt_publish_many([(topic, payload)])
    if error is not None:
        raise error


def post(properties, payload):
    return http_send(protocol="HTTP", properties=properties, payload=payload)


class MqttTransportTests:
    def test_it_publishes_the_exact_json_with_qos_1_not_retained(self, mqtt_receiver):
        publish(mqtt_receiver.topic, BODY)
        message = mqtt_receiver.get()
        assert json.loads(message.payload) == BODY
        assert message.qos == 1
        assert not message.retain

    def test_a_payload_that_knows_its_encoding_is_sent_as_that_text(self, mqtt_receiver):
        payload = encoded_object([("receiver", "Consümer"), ("payload", encoded(BODY))])
        publish(mqtt_receiver.topic, payload)
        assert mqtt_receiver.get().payload == payload.text.encode()
        assert json.loads(payload.text) == {"receiver": "Consümer", "payload": BODY}

    def test_it_publishes_with_the_configured_qos(self, settings, mqtt_receiver):
        settings.MQTT_QOS = 2
        publish(mqtt_receiver.topic, BODY)
        assert mqtt_receiver.get().qos == 2

    def test_unreadable_tls_files_are_reported_as_transient(self, settings, tmp_path):
        settings.MQTT_BROKER_URL = f"mqtts://127.0.0.1:{reserved_port()}"
        settings.TLS_CA_FILE = str(tmp_path / "missing-ca.pem")
        with pytest.raises(TransportError, match="TLS settings") as error:
            publish("test/nobody", BODY)
        assert error.value.transient

    def test_it_reports_an_unreachable_broker_as_transient(self, settings):
        settings.MQTT_BROKER_URL = f"mqtt://127.0.0.1:{reserved_port()}"
        with pytest.raises(TransportError) as error:
            publish("test/nobody", BODY)
        assert error.value.transient

    def test_it_refuses_permanently_without_a_broker_url(self, settings):
        settings.MQTT_BROKER_URL = ""
        with pytest.raises(TransportError, match="MQTT is not configured") as error:
            publish("test/nobody", BODY)
        assert not error.value.transient

    def test_it_refuses_a_wildcard_topic_permanently(self, mqtt_broker):
        with pytest.raises(TransportError, match="Invalid MQTT topic") as error:
            publish("test/#", BODY)
        assert not error.value.transient

    def test_the_process_keeps_one_connection_for_its_publishes(self, mqtt_receiver):
        publish(mqtt_receiver.topic, BODY)
        first = mqtt_publishing._publisher._client
        publish(mqtt_receiver.topic, {"second": True})
        assert mqtt_publishing._publisher._client is first and first.is_connected()
        assert [json.loads(mqtt_receiver.get().payload) for _ in range(2)] == [
            BODY, {"second": True}]

    def test_a_lost_connection_is_opened_again_at_the_next_publish(self, mqtt_receiver):
        publish(mqtt_receiver.topic, BODY)
        lost = mqtt_publishing._publisher._client
        # The broker or the network drops it: the peer ends the stream under paho's loop.
        lost.socket().shutdown(socket.SHUT_RDWR)
        wait_until(lambda: not lost.is_connected(), timeout=10)
        publish(mqtt_receiver.topic, {"after": "reconnect"})
        assert not lost.is_connected()  # stays lost: the publisher alone reconnects
        assert mqtt_publishing._publisher._client is not lost
        assert [json.loads(mqtt_receiver.get().payload) for _ in range(2)] == [
            BODY, {"after": "reconnect"}]

    def test_another_broker_url_gets_its_own_connection(self, settings, mqtt_receiver):
        publish(mqtt_receiver.topic, BODY)
        working = settings.MQTT_BROKER_URL
        settings.MQTT_BROKER_URL = f"mqtt://127.0.0.1:{reserved_port()}"
        with pytest.raises(TransportError) as error:
            publish(mqtt_receiver.topic, BODY)
        assert error.value.transient and mqtt_publishing._publisher._client is None
        settings.MQTT_BROKER_URL = working
        publish(mqtt_receiver.topic, {"back": True})
        assert [json.loads(mqtt_receiver.get().payload) for _ in range(2)] == [
            BODY, {"back": True}]

    def test_it_reads_credentials_and_tls_from_the_broker_url(self):
        broker = broker_address("mqtts://user%40x:p%3Ass@broker.example:8884")
        assert (broker.host, broker.port, broker.tls) == ("broker.example", 8884, True)
        assert (broker.username, broker.password) == ("user@x", "p:ss")
        assert broker_address("mqtt://127.0.0.1").port == 1883
        assert broker_address("mqtts://127.0.0.1").port == 8883


class _SlowAcknowledgement:
    """A publish the broker acknowledges `delay` seconds after it is awaited."""

    def __init__(self, delay: float) -> None:
        self.delay, self.published = delay, False

    def wait_for_publish(self, timeout: float) -> None:
        time.sleep(min(self.delay, timeout))
        self.published = self.delay <= timeout

    def is_published(self) -> bool:
        return self.published


class _SlowBroker:
    """Stands in for the process's broker connection: each publish is acknowledged after
    the next of `delays`."""

    def __init__(self, delays: list[float]) -> None:
        self.delays, self.closed = list(delays), False

    def client(self, broker, deadline):
        return self

    def publish(self, topic, text, qos, retain):
        return _SlowAcknowledgement(self.delays.pop(0))

    def close(self, client) -> None:
        self.closed = True


class MqttAcknowledgementTimeTests:
    def test_each_acknowledgement_gets_the_timeout_after_the_one_before(self, settings,
                                                                          monkeypatch):
        settings.MQTT_BROKER_URL, settings.MQTT_TIMEOUT_SECONDS = "mqtt://127.0.0.1:1883", 1
        broker = _SlowBroker([0.4] * 4)  # 1.6 s in all, 0.4 s apart
        monkeypatch.setattr(mqtt_publishing, "_publisher", broker)
        assert mqtt_publish_many([(f"t/{n}", {"n": n}) for n in range(4)]) == [None] * 4
        assert not broker.closed

    def test_a_broker_that_stops_answering_fails_the_rest_after_the_timeout(self, settings,
                                                                            monkeypatch):
        settings.MQTT_BROKER_URL, settings.MQTT_TIMEOUT_SECONDS = "mqtt://127.0.0.1:1883", 1
        broker = _SlowBroker([0.1, 5.0, 0.1])
        monkeypatch.setattr(mqtt_publishing, "_publisher", broker)
        started = time.monotonic()
        first, second, third = mqtt_publish_many([(f"t/{n}", {"n": n}) for n in range(3)])
        assert first is None
        assert second.transient and "not acknowledged in time" in str(second)
        assert third is not None and third.transient  # its time had run out meanwhile
        assert broker.closed and time.monotonic() - started < 2


class HttpTransportTests:
    def test_it_sends_method_path_headers_and_json_body(self, http_sink):
        post(http_sink.properties(method="put", path="hooks/orchestration"), BODY)
        [request] = http_sink.requests
        assert (request.method, request.path) == ("PUT", "/hooks/orchestration")
        assert request.headers["content-type"] == "application/json"
        assert request.headers["accept"] == "text/plain, application/json"
        assert "authorization" not in request.headers
        assert request.json() == BODY

    @pytest.mark.parametrize("status", [500, 503, 408, 429])
    def test_it_reports_server_errors_and_throttling_as_transient(self, http_sink, status):
        http_sink.status = status
        with pytest.raises(TransportError, match=str(status)) as error:
            post(http_sink.properties(), BODY)
        assert error.value.transient

    @pytest.mark.parametrize("status", [400, 404, 410, 301])
    def test_it_reports_refusals_and_redirects_as_permanent(self, http_sink, status):
        http_sink.status = status
        with pytest.raises(TransportError, match=str(status)) as error:
            post(http_sink.properties(), BODY)
        assert not error.value.transient
        assert len(http_sink.requests) == 1

    def test_it_reports_a_closed_port_as_transient(self):
        properties = {"address": "127.0.0.1", "port": reserved_port(), "method": "POST",
                      "path": "/"}
        with pytest.raises(TransportError) as error:
            post(properties, BODY)
        assert error.value.transient

    def test_it_reports_a_timeout_as_transient(self, settings, http_sink):
        settings.NOTIFY_HTTP_TIMEOUT_SECONDS = 0.2
        http_sink.delay = 1
        with pytest.raises(TransportError) as error:
            post(http_sink.properties(), BODY)
        assert error.value.transient

    def test_a_destination_dripping_its_answer_is_given_up_on_at_the_deadline(self, settings):
        """Each read gets a byte within the read timeout: only the attempt's deadline (the
        connect and the read timeout, 2 s here) ends it."""
        settings.NOTIFY_HTTP_CONNECT_TIMEOUT_SECONDS = 1
        settings.NOTIFY_HTTP_TIMEOUT_SECONDS = 1
        dripping = SilentTcpServer(drip=0.2)
        try:
            started = time.monotonic()
            attempt = Background(lambda: post(dripping.properties(), BODY))
            error = attempt.outcome(timeout=30)
            took = time.monotonic() - started
        finally:
            dripping.close()
        assert isinstance(error, TransportError) and error.transient, error
        assert "no complete answer within 2 s" in str(error)
        assert 2 <= took < 5

    def test_it_builds_urls_with_bracketed_ipv6_and_a_leading_slash(self):
        assert http_url("HTTPS", {"address": "::1", "port": 8443, "path": "x/y?z=1"}) == \
            "https://[::1]:8443/x/y?z=1"
        assert http_url("HTTP", {"address": "10.0.0.1", "port": "80"}) == "http://10.0.0.1:80/"

    @pytest.mark.parametrize("properties", [
        {"port": 80, "path": "/"},
        {"address": "127.0.0.1", "port": "eighty"},
        {"address": "127.0.0.1", "port": 70000},
    ])
    def test_it_refuses_incomplete_interfaces_permanently(self, properties):
        with pytest.raises(TransportError) as error:
            post(properties, BODY)
        assert not error.value.transient
