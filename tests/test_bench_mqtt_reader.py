"""bench/mqtt_reader.py, the benchmarks' lean MQTT subscriber: its packets byte for byte, a
read holding many packets or part of one, and against the test run's Mosquitto every QoS-1
message once and acknowledged, the pings that keep an idle connection, and a refused
subscription."""
import os
import threading
import time
import uuid
from urllib.parse import urlsplit

import pytest
from paho.mqtt.client import Client
from paho.mqtt.enums import CallbackAPIVersion

from tests.bench_modules import load_bench

mqtt_reader = load_bench("mqtt_reader")


def broker() -> tuple[str, int]:
    parts = urlsplit(os.environ.get("MQTT_BROKER_URL", "mqtt://127.0.0.1:1883"))
    return parts.hostname or "127.0.0.1", parts.port or 1883


def test_the_remaining_length_is_mqtts_variable_byte_integer() -> None:
    assert mqtt_reader.remaining_length(0) == b"\x00"
    assert mqtt_reader.remaining_length(127) == b"\x7f"
    assert mqtt_reader.remaining_length(128) == b"\x80\x01"
    assert mqtt_reader.remaining_length(16_383) == b"\xff\x7f"
    assert mqtt_reader.remaining_length(2_097_152) == b"\x80\x80\x80\x01"


def test_connect_and_subscribe_are_mqtt_3_1_1_packets() -> None:
    assert mqtt_reader.connect_packet("me", 60) == (
        b"\x10\x0e\x00\x04MQTT\x04\x02\x00\x3c\x00\x02me")
    assert mqtt_reader.subscribe_packet("a/#", 1) == b"\x82\x08\x00\x01\x00\x03a/#\x01"


def test_packets_finds_the_complete_ones_and_where_the_rest_begins() -> None:
    publish = b"\x32\x09\x00\x03a/b\x00\x07hi"  # QoS 1, topic a/b, id 7, payload hi
    large = b"\x30" + mqtt_reader.remaining_length(300) + b"\x00\x01t" + b"x" * 297
    buffer = bytearray(publish + b"\xd0\x00" + large + publish[:5])

    found, used = mqtt_reader.packets(buffer)

    assert [(first, end - start) for first, start, end in found] == [
        (0x32, 9), (0xD0, 0), (0x30, 300)]
    assert used == len(buffer) - 5
    assert mqtt_reader.packets(bytearray(b"\x30\x80")) == ([], 0)  # length not complete yet
    with pytest.raises(mqtt_reader.ProtocolError):
        mqtt_reader.packets(bytearray(b"\x30\xff\xff\xff\xff\x01"))


def publisher() -> Client:
    client = Client(callback_api_version=CallbackAPIVersion.VERSION2,
                    client_id=f"reader-test-{uuid.uuid4().hex[:8]}")
    client.connect(*broker())
    client.loop_start()
    return client


class Received:
    def __init__(self) -> None:
        self.messages: list[tuple[float, str, bytes]] = []
        self.count = threading.Semaphore(0)

    def __call__(self, at: float, topic: str, payload: bytes) -> None:
        self.messages.append((at, topic, payload))
        self.count.release()

    def wait(self, count: int, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        for _ in range(count):
            assert self.count.acquire(timeout=max(0.0, deadline - time.monotonic()))


def test_every_qos1_message_arrives_once_and_is_acknowledged() -> None:
    prefix = f"reader-test/{uuid.uuid4().hex[:8]}/"
    client_id = f"reader-test-{uuid.uuid4().hex[:8]}"
    received = Received()
    subscriber = mqtt_reader.Subscriber(*broker(), f"{prefix}#", received, client_id=client_id)
    subscriber.start()
    sender = publisher()
    try:
        sent = [(f"{prefix}{n}", bytes([n % 256]) * (n * 37 % 3000)) for n in range(500)]
        infos = [sender.publish(topic, payload, qos=1) for topic, payload in sent]
        received.wait(len(sent))
        for info in infos:
            info.wait_for_publish(10)
        time.sleep(0.5)  # anything more the broker would send
        # Mosquitto keeps at most 20 unacknowledged QoS-1 messages in flight to a client: all
        # 500 arriving means each was acknowledged; each came once, in order, whole.
        assert [(topic, payload) for _, topic, payload in received.messages] == sent
        assert subscriber.error is None
    finally:
        subscriber.stop()
        sender.disconnect()
        sender.loop_stop()


def test_an_idle_connection_is_kept_by_its_pings() -> None:
    prefix = f"reader-test/{uuid.uuid4().hex[:8]}/"
    received = Received()
    subscriber = mqtt_reader.Subscriber(*broker(), f"{prefix}#", received,
                                        client_id=f"reader-test-{uuid.uuid4().hex[:8]}",
                                        keepalive=2)
    subscriber.start()
    sender = publisher()
    try:
        time.sleep(4)  # the broker closes a connection silent for 1.5 × its keepalive
        sender.publish(f"{prefix}late", b"still here", qos=1)
        received.wait(1)
        assert received.messages[0][1:] == (f"{prefix}late", b"still here")
        assert subscriber.error is None
    finally:
        subscriber.stop()
        sender.disconnect()
        sender.loop_stop()


def test_a_refused_subscription_raises() -> None:
    subscriber = mqtt_reader.Subscriber(*broker(), "bad/#/filter", Received(),
                                        client_id=f"reader-test-{uuid.uuid4().hex[:8]}")
    with pytest.raises((mqtt_reader.ProtocolError, ConnectionError)):
        subscriber.start()
