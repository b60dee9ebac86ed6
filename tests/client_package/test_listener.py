"""The installed client's push listener against a real Mosquitto of the test's own that is
stopped and started again: the listener connects again, subscribes again and pulls again, so
that the change made while it was away reaches its callback, and later pushes still come."""
import contextlib
import threading
import uuid

import pytest

from tests.client_package.service import client_service
from tests.concurrency import wait_for
from tests.endpoints import mosquitto
from tests.ports import reserved_port

pytestmark = pytest.mark.django_db(transaction=True)

INSTANCE = "ListenerProvider|listenerTemperature|1.0.0"


class Recorder:
    """What the listener hands over, and what each re-pull answered (the same objects)."""

    def __init__(self, orchestrator, request: dict) -> None:
        self.received: list[dict] = []
        self.pulled: list[dict] = []
        self._lock = threading.Lock()
        self._orchestrator, self._request = orchestrator, request

    def on_push(self, response: dict) -> None:
        with self._lock:
            self.received.append(response)

    def repull(self) -> dict:
        response = self._orchestrator.pull(self._request)
        with self._lock:
            self.pulled.append(response)
        return response

    def values(self) -> list[int]:
        with self._lock:
            return [response["results"][0]["metadata"]["v"] for response in self.received]


def change(sorch, operator, value: int) -> None:
    operator.instances_create([sorch.http_instance(
        provider="ListenerProvider", service="listenerTemperature", version="1.0.0",
        address="127.0.0.1", port=8080, base_path="/t", metadata={"v": value})])


class PushListenerTests:
    def test_it_connects_and_pulls_again_after_the_broker_was_gone(self, client_package,
                                                                   tmp_path):
        sorch = client_package.module()
        port = reserved_port()
        broker = f"mqtt://127.0.0.1:{port}"
        topic = f"test/client/{uuid.uuid4().hex}"
        with client_service(tmp_path / "gunicorn.log", mqtt=broker) as url:
            operator = sorch.Orchestrator(url, system="Sysop")
            consumer = sorch.Orchestrator(url, system="ListenerConsumer")
            request = sorch.orchestration_request("listenerTemperature")
            change(sorch, operator, 1)
            operator.rules_create([{"consumer": "ListenerConsumer",
                                    "serviceInstanceId": INSTANCE, "priority": 1}])
            recorder = Recorder(consumer, request)
            with contextlib.ExitStack() as cleanup:
                with mosquitto(port):
                    listener = sorch.PushListener(broker, topic, recorder.on_push,
                                                  repull=recorder.repull, reconnect_max_delay=1)
                    cleanup.callback(listener.close)
                    consumer.subscribe(request, topic, trigger=True)
                    wait_for(lambda: recorder.values() == [1], what="the first push")
                # The broker is gone: the change's push is lost, the listener waits.
                change(sorch, operator, 2)
                assert recorder.values() == [1] and recorder.pulled == []
                with mosquitto(port):
                    wait_for(lambda: recorder.values()[-1:] == [2], timeout=30,
                             what="the result pulled after connecting again")
                    assert listener.reconnects == 1
                    [pulled] = recorder.pulled
                    assert recorder.received[1] is pulled  # handed over as it was pulled
                    # subscribed again: the next change is pushed
                    change(sorch, operator, 3)
                    wait_for(lambda: recorder.values()[-1:] == [3], what="a push after it")
                    assert len(recorder.pulled) == 1
        assert recorder.values()[:2] == [1, 2]

    def test_an_unreachable_broker_is_a_client_error(self, client_package):
        sorch = client_package.module()
        port = reserved_port()
        with pytest.raises(sorch.ClientError) as failed:
            sorch.PushListener(f"mqtt://127.0.0.1:{port}", "test/client/none", print)
        assert str(failed.value) == (f"cannot reach the MQTT broker 127.0.0.1:{port}: "
                                     "Connection refused")
        with pytest.raises(sorch.ClientError) as invalid:
            sorch.PushListener("http://127.0.0.1:1883", "test/client/none", print)
        assert "invalid MQTT broker URL 'http://127.0.0.1:1883'" in str(invalid.value)
