"""The two ends of the MQTT interface in tests: the interface's own process (`manage.py
mqtt_api`) and a caller that speaks only MQTT."""
import base64
import json
import os
import queue
import ssl
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest
from paho.mqtt.client import Client
from paho.mqtt.enums import CallbackAPIVersion

from tests.concurrency import wait_until
from tests.worker import ROOT, _database_url

SHARED = "Shared|temperatureInfo|1.0.0"  # the instance of the `catalog` fixture, Car1's rule
PULL_BODY = {"serviceRequirement": {"serviceDefinition": "temperatureInfo"}}


def presented(certificate: Path) -> str:
    """`authentication` under the certificate policy, as the reference's clients send it: the
    Base64 of the PEM of `certificate` (a `make_certificates` stem)."""
    return base64.b64encode(certificate.with_suffix(".pem").read_bytes()).decode()


class Api:
    """One MQTT interface process (its own base topic, so that tests do not meet)."""

    def __init__(self, port: int, base: str, log: Path, **env: str) -> None:
        self.log = log
        environment = {**os.environ, "DATABASE_URL": _database_url(), "CELERY_BROKER_URL": "",
                       "MQTT_BROKER_URL": f"mqtt://127.0.0.1:{port}", "MQTT_API_ENABLED": "true",
                       "MQTT_API_BASE_TOPIC": base, "CONN_MAX_AGE": "0", **env}
        with log.open("a") as output:
            self.process = subprocess.Popen([sys.executable, "manage.py", "mqtt_api"], cwd=ROOT,
                                            env=environment, stdout=output,
                                            stderr=subprocess.STDOUT)
        self.wait_ready(1)

    def wait_ready(self, times: int) -> None:
        def ready() -> bool:
            return (self.log.read_text().count("ready (operation topics subscribed)") >= times
                    or self.process.poll() is not None)

        if not wait_until(ready, timeout=30) or self.process.poll() is not None:
            self.stop()
            pytest.fail(f"the MQTT interface is not ready:\n{self.log.read_text()[-3000:]}",
                        pytrace=False)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Caller:
    """A client that speaks only MQTT: publishes templates, collects answers. With
    `certificate` (the stem of a `make_certificates` file pair, whose directory holds ca.pem)
    it connects over TLS presenting that certificate; with `user` it logs in with `password`.
    It listens on `reply_topic` (by default a topic of its own)."""

    def __init__(self, port: int, base: str, certificate: Path | None = None, *,
                 user: str | None = None, password: str | None = None,
                 reply_topic: str | None = None) -> None:
        self.base = base
        self.reply_topic = reply_topic or f"test/replies/{uuid.uuid4().hex}"
        self.answers: queue.Queue[dict] = queue.Queue()
        self.client = Client(callback_api_version=CallbackAPIVersion.VERSION2,
                             client_id=f"caller-{uuid.uuid4().hex[:8]}")
        self.client.on_message = lambda c, u, m: self.answers.put(json.loads(m.payload))
        subscribed = threading.Event()
        self.client.on_subscribe = lambda *_: subscribed.set()
        if certificate is not None:
            self.client.tls_set(ca_certs=str(certificate.parent / "ca.pem"),
                                certfile=f"{certificate}.pem", keyfile=f"{certificate}.key",
                                cert_reqs=ssl.CERT_REQUIRED)
        if user is not None:
            self.client.username_pw_set(user, password)
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()
        self.client.subscribe(self.reply_topic, qos=1)
        assert subscribed.wait(timeout=10), "the broker never acknowledged the subscription"

    def send(self, operation: str, payload=None, *, system: str = "Car1", raw: bytes = None,
             **template) -> None:
        message = raw if raw is not None else json.dumps({
            "traceId": template.pop("trace", "t"), "authentication": f"SYSTEM//{system}",
            "responseTopic": self.reply_topic, "qosRequirement": 1, "payload": payload,
            **template}).encode()
        self.client.publish(self.base + operation, message, qos=1).wait_for_publish(5)

    def ask(self, operation: str, payload=None, **kwargs) -> dict:
        self.send(operation, payload, **kwargs)
        return self.answers.get(timeout=15)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()
