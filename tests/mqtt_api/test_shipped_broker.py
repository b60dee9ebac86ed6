"""The broker configuration compose.yaml ships (deploy/mosquitto.conf and its ACL
deploy/mosquitto.acl, issue 29 item 1), run by a real Mosquitto: only clients with a password
get in, each system reads only its own subtree (`arrowhead/systems/<name>/…`) and may publish
requests but not read them, and the service (logging in as SYSTEM_NAME through
MQTT_BROKER_URL) pushes to a system and answers its requests over the MQTT interface.

The configuration runs as shipped, with only what compose mounts changed: the listener (a free
loopback port instead of the compose network's 1883) and the files' folder."""
import queue
import subprocess
import threading
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from paho.mqtt.client import Client
from paho.mqtt.enums import CallbackAPIVersion

from notifications.mqtt_publishing import mqtt_publish_many
from tests.endpoints import broker_state_directory, mosquitto
from tests.mqtt_api.clients import PULL_BODY, Api, Caller
from tests.ports import reserved_port
from tests.worker import ROOT

SERVICE = "SimpleStoreServiceOrchestration"
BASE = "arrowhead/serviceorchestration/"
PASSWORDS = {SERVICE: "service-secret", "Car1": "car1-secret", "Car2": "car2-secret"}
WAIT = 10


def shipped_broker_config(directory: Path, port: int) -> Path:
    """deploy/mosquitto.conf with the listener on 127.0.0.1:`port` and compose's mounted files
    in `directory`: the ACL as shipped, a password file made by mosquitto_passwd."""
    shipped = (ROOT / "deploy" / "mosquitto.conf").read_text()
    assert "\nlistener 1883\n" in shipped
    text = shipped.replace("\nlistener 1883\n", f"\nlistener {port} 127.0.0.1\n")
    text = text.replace("/mosquitto/config/", f"{directory}/")
    (directory / "mosquitto.acl").write_text((ROOT / "deploy" / "mosquitto.acl").read_text())
    passwords = directory / "mosquitto.passwd"
    passwords.touch()
    for user, password in PASSWORDS.items():
        subprocess.run(["mosquitto_passwd", "-b", str(passwords), user, password], check=True)
    config = directory / "mosquitto.conf"
    config.write_text(text)
    for path in directory.iterdir():
        path.chmod(0o644)  # read by Mosquitto as its own user when started as root
    return config


@pytest.fixture(scope="module")
def shipped_broker():
    port = reserved_port()
    with broker_state_directory() as directory:
        with mosquitto(port, config=shipped_broker_config(Path(directory), port)):
            yield port


class Member:
    """A client of the broker logged in as `user` (none: anonymous)."""

    def __init__(self, port: int, user: str | None, password: str | None = None) -> None:
        self.messages: queue.Queue[tuple[str, bytes]] = queue.Queue()
        self._connected, self._subscribed = threading.Event(), queue.Queue()
        self.accepted: bool | None = None
        self.client = Client(callback_api_version=CallbackAPIVersion.VERSION2,
                             client_id=f"test-{uuid.uuid4().hex[:8]}")
        if user is not None:
            self.client.username_pw_set(user, password)
        self.client.on_connect = self._on_connect
        self.client.on_subscribe = lambda c, u, mid, codes, p: self._subscribed.put(codes)
        self.client.on_message = lambda c, u, m: self.messages.put((m.topic, m.payload))
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()
        assert self._connected.wait(WAIT), "the broker neither accepted nor refused the client"

    def _on_connect(self, client, userdata, flags, reason, properties) -> None:
        self.accepted = not reason.is_failure
        self._connected.set()

    def subscribe(self, topic: str) -> bool:
        """Whether the broker granted the subscription (Mosquitto 2.0 grants one the ACL
        refuses, and then delivers nothing on it)."""
        self.client.subscribe(topic, qos=1)
        [code] = self._subscribed.get(timeout=WAIT)
        return not code.is_failure

    def publish(self, topic: str, payload: bytes) -> None:
        self.client.publish(topic, payload, qos=1).wait_for_publish(WAIT)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


@pytest.fixture
def members(shipped_broker):
    opened: list[Member] = []

    def member(user: str | None, password: str | None = None) -> Member:
        opened.append(Member(shipped_broker, user, password))
        return opened[-1]

    yield member
    for opened_member in opened:
        opened_member.close()


def car(members, name: str) -> Member:
    return members(name, PASSWORDS[name])


class AuthenticationTests:
    def test_an_anonymous_client_is_refused(self, members):
        assert members(None).accepted is False

    def test_a_system_cannot_log_in_as_another(self, members):
        assert members("Car2", PASSWORDS["Car1"]).accepted is False
        assert members("Car2", PASSWORDS["Car2"]).accepted is True


class TopicAclTests:
    def test_a_system_cannot_subscribe_to_another_systems_topics(self, members):
        car1, car2, service = car(members, "Car1"), car(members, "Car2"), car(members, SERVICE)
        assert car2.subscribe("arrowhead/systems/Car2/#")
        car1.subscribe("arrowhead/systems/Car2/#")  # Mosquitto 2.0 grants it, delivers nothing
        car1.subscribe("arrowhead/systems/#")
        service.publish("arrowhead/systems/Car2/notify", b"for Car2 only")
        assert car2.messages.get(timeout=WAIT) == ("arrowhead/systems/Car2/notify",
                                                   b"for Car2 only")
        assert car1.messages.empty()

    def test_a_system_cannot_publish_on_another_systems_topics(self, members):
        car1, car2 = car(members, "Car1"), car(members, "Car2")
        assert car2.subscribe("arrowhead/systems/Car2/#")
        car1.publish("arrowhead/systems/Car2/notify", b"forged push")
        car2.publish("arrowhead/systems/Car2/notify", b"not even its own")
        car(members, SERVICE).publish("arrowhead/systems/Car2/notify", b"real push")
        assert car2.messages.get(timeout=WAIT)[1] == b"real push"
        assert car2.messages.empty()

    def test_systems_publish_requests_but_cannot_read_anyones(self, members):
        car1, car2, service = car(members, "Car1"), car(members, "Car2"), car(members, SERVICE)
        car1.subscribe(BASE + "#")
        assert service.subscribe(f"$share/serviceorchestration/{BASE}#")
        car2.publish(BASE + "orchestration/pull", b'{"authentication": "a token of Car2"}')
        assert service.messages.get(timeout=WAIT)[0] == BASE + "orchestration/pull"
        assert car1.messages.empty()


@pytest.mark.django_db(transaction=True)
class ServiceClientTests:
    def test_the_service_pushes_to_a_system_with_the_url_credentials(self, members,
                                                                     shipped_broker,
                                                                     monkeypatch):
        car1 = car(members, "Car1")
        assert car1.subscribe("arrowhead/systems/Car1/#")
        monkeypatch.setattr(settings, "MQTT_BROKER_URL", f"mqtt://{SERVICE}:"
                            f"{PASSWORDS[SERVICE]}@127.0.0.1:{shipped_broker}")
        assert mqtt_publish_many([("arrowhead/systems/Car1/temperature", {"results": []})]) \
            == [None]
        assert car1.messages.get(timeout=WAIT) == ("arrowhead/systems/Car1/temperature",
                                                   b'{"results": []}')

    def test_the_mqtt_interface_answers_a_system_on_its_own_subtree(self, catalog,
                                                                    shipped_broker,
                                                                    tmp_path):
        url = f"mqtt://{SERVICE}:{PASSWORDS[SERVICE]}@127.0.0.1:{shipped_broker}"
        api = Api(shipped_broker, BASE, tmp_path / "api.log", MQTT_BROKER_URL=url,
                  MQTT_SYSTEM_TOPIC_ROOT="arrowhead/systems/")  # as compose runs it
        caller = Caller(shipped_broker, BASE, user="Car1", password=PASSWORDS["Car1"],
                        reply_topic=f"arrowhead/systems/Car1/replies/{uuid.uuid4().hex}")
        try:
            reply = caller.ask("orchestration/pull", PULL_BODY, system="Car1")
            assert (reply["status"], reply["receiver"]) == (200, "Car1")
        finally:
            caller.close()
            api.stop()
        assert PASSWORDS[SERVICE] not in api.log.read_text()
        assert f"mqtt://{SERVICE}@127.0.0.1:{shipped_broker}" in api.log.read_text()
