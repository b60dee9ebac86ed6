"""The MQTT interface's process (`manage.py mqtt_api`) against the real Mosquitto: a
consumer that speaks only MQTT pulls, subscribes and unsubscribes; bad input is answered or
dropped without stopping the loop; two processes on a shared subscription answer each
request once; a broker restart is survived (a throw-away Mosquitto on its own port)."""
import json
import os
import queue
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from paho.mqtt.client import Client
from paho.mqtt.enums import CallbackAPIVersion

from mqtt_api.operations import OPERATIONS
from tests.endpoints import free_port, mosquitto
from tests.store.helpers import instance_body, make_instances, make_rules
from tests.worker import ROOT, _database_url

pytestmark = pytest.mark.django_db(transaction=True)

SHARED = "Shared|temperatureInfo|1.0.0"
PULL_BODY = {"serviceRequirement": {"serviceDefinition": "temperatureInfo"}}


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
        deadline = time.monotonic() + 30
        while self.log.read_text().count("ready (operation topics subscribed)") < times:
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"the MQTT interface is not ready:\n{self.log.read_text()[-3000:]}",
                            pytrace=False)
            time.sleep(0.05)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Caller:
    """A client that speaks only MQTT: publishes templates, collects answers."""

    def __init__(self, port: int, base: str) -> None:
        self.base, self.reply_topic = base, f"test/replies/{uuid.uuid4().hex}"
        self.answers: queue.Queue[dict] = queue.Queue()
        self.client = Client(callback_api_version=CallbackAPIVersion.VERSION2,
                             client_id=f"caller-{uuid.uuid4().hex[:8]}")
        self.client.on_message = lambda c, u, m: self.answers.put(json.loads(m.payload))
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()
        self.client.subscribe(self.reply_topic, qos=1)[1]
        time.sleep(0.2)  # SUBACK

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


@pytest.fixture
def catalog():
    make_instances(instance_body("Shared", metadata={"v": 1}))
    make_rules(("Car1", SHARED, 1))


@pytest.fixture
def broker():
    port = free_port()
    with mosquitto(port) as process:
        yield port, process


@pytest.fixture
def base() -> str:
    return f"test/so-{uuid.uuid4().hex[:8]}/"


class RoundTripTests:
    def test_a_consumer_pulls_subscribes_and_unsubscribes_over_mqtt(self, catalog, broker,
                                                                    base, tmp_path):
        port, _ = broker
        api, caller = Api(port, base, tmp_path / "api.log"), Caller(port, base)
        try:
            pulled = caller.ask("orchestration/pull", PULL_BODY, trace="p-1")
            assert (pulled["status"], pulled["traceId"], pulled["receiver"]) == (200, "p-1",
                                                                                "Car1")
            assert [r["serviceInstanceId"] for r in pulled["payload"]["results"]] == [SHARED]
            subscribed = caller.ask("orchestration/subscribe", {
                **{"orchestrationRequest": PULL_BODY},
                "notifyInterface": {"protocol": "MQTT", "properties": {"topic": "car1/r"}}})
            assert subscribed["status"] == 201
            removed = caller.ask("orchestration/unsubscribe", subscribed["payload"])
            assert (removed["status"], removed["payload"]) == (200, "")
            refused = caller.ask("orchestration/management/store/query", {})
            assert refused["status"] == 403
            assert refused["payload"]["origin"] == base + "orchestration/management/store/query"
        finally:
            caller.close()
            api.stop()


class EveryOperationTests:
    def test_every_operation_round_trips_through_the_broker(self, catalog, broker, base,
                                                            tmp_path):
        port, _ = broker
        api, caller = Api(port, base, tmp_path / "api.log"), Caller(port, base)
        subscription = {"orchestrationRequest": PULL_BODY, "notifyInterface": {
            "protocol": "MQTT", "properties": {"topic": "car1/r"}}}
        answered = {}

        def call(operation: str, payload, system: str = "Sysop", **kwargs) -> dict:
            reply = caller.ask(operation, payload, system=system, **kwargs)
            assert reply["status"] < 300, (operation, reply)
            answered[operation] = reply["status"]
            return reply["payload"]

        try:
            call("orchestration/pull", PULL_BODY, system="Car1")
            own = call("orchestration/subscribe", subscription, system="Car1",
                       params={"trigger": "false"})
            call("orchestration/unsubscribe", own, system="Car1")
            store = "orchestration/management/store/"
            rule = call(store + "query", {})["entries"][0]["id"]
            call(store + "create", {"entries": [{"consumer": "Car2", "serviceInstanceId": SHARED,
                                                 "priority": 1}]})
            call(store + "modify-priorities", {rule: 3})
            call(store + "remove", [rule])
            push = "orchestration/management/push/"
            pushed = call(push + "subscribe", {"subscriptions": [
                {**subscription, "targetSystemName": "Car1"}]})["entries"][0]["id"]
            call(push + "query", {})
            call(push + "trigger", {"subscriptionIds": [pushed]})
            call(push + "unsubscribe", [pushed])
            call("orchestration/management/history/query", {})
            call("general/management/get-log", {})
            call("general/management/get-config", ["max.page.size"])
        finally:
            caller.close()
            api.stop()
        assert set(answered) == set(OPERATIONS)  # every operation, each answered 2xx


class BadInputTests:
    def test_bad_messages_are_answered_or_dropped_and_the_loop_goes_on(self, catalog, broker,
                                                                       base, tmp_path):
        port, _ = broker
        api, caller = Api(port, base, tmp_path / "api.log", MAX_REQUEST_BODY_BYTES="100000"), \
            Caller(port, base)
        try:
            caller.send("orchestration/pull", raw=b"{not json")
            caller.send("orchestration/pull", raw=b"x" * 3_000_000)  # several megabytes
            caller.send("orchestration/pull", raw=json.dumps({"payload": {}}).encode())
            wrong = caller.ask("orchestration/pull", qosRequirement=7)
            assert wrong["status"] == 400 and wrong["payload"]["errorMessage"] == \
                "Unknown MQTT QoS value: 7"
            typed = caller.ask("orchestration/pull", {"serviceRequirement": []})
            assert typed["status"] == 400
            unknown = caller.ask("orchestration/unsubscribe", 5)
            assert unknown["status"] == 400
            for n in range(50):  # a flood: every one answered
                caller.send("orchestration/pull", PULL_BODY, trace=f"flood-{n}")
            traces = {caller.answers.get(timeout=30)["traceId"] for _ in range(50)}
            assert traces == {f"flood-{n}" for n in range(50)}
            assert caller.ask("orchestration/pull", PULL_BODY)["status"] == 200
            assert caller.answers.empty()  # the dropped ones were not answered
            log = api.log.read_text()
            assert "dropped a request of 3000000 bytes" in log
            assert log.count("dropped a message") == 1  # the unparsable one
            assert "named no response topic" in log
        finally:
            caller.close()
            api.stop()


class ScaleOutTests:
    def test_two_processes_share_the_requests_and_answer_each_once(self, catalog, broker, base,
                                                                   tmp_path):
        port, _ = broker
        first = Api(port, base, tmp_path / "first.log")
        second = Api(port, base, tmp_path / "second.log")
        caller = Caller(port, base)
        try:
            for n in range(40):
                caller.send("orchestration/pull", PULL_BODY, trace=f"r-{n}")
            traces = [caller.answers.get(timeout=30)["traceId"] for _ in range(40)]
            time.sleep(1)  # a second answer to any of them would arrive meanwhile
            assert sorted(traces) == sorted(f"r-{n}" for n in range(40))
            assert caller.answers.empty()
        finally:
            caller.close()
            first.stop()
            second.stop()

    def test_a_broker_restart_is_survived(self, catalog, base, tmp_path):
        port = free_port()
        with mosquitto(port):
            api = Api(port, base, tmp_path / "api.log")
        try:
            with mosquitto(port):
                api.wait_ready(2)  # reconnected and subscribed again
                caller = Caller(port, base)
                try:
                    assert caller.ask("orchestration/pull", PULL_BODY)["status"] == 200
                finally:
                    caller.close()
        finally:
            api.stop()
