"""A worker killed in the middle of a batch of MQTT deliveries (its publishes in flight): every
delivery of the batch is sent again after about one lease, and each subscriber gets its
notification (issue 15)."""
import json
import os
import signal
import socket
import threading
import uuid

import pytest

from config.celery import app as celery_app
from notifications.models import NotificationDelivery
from notifications.sweeping import deliveries_sweep
from notifications.tasks import deliver_batch_task
from tests.concurrency import wait_for
from tests.endpoints import MqttReceiver, make_delivery
from tests.notifications.test_dead_claimant import LEASE, _forget_unacked
from tests.worker import forget_queues, start_worker, stop_worker, worker_environment

pytestmark = pytest.mark.django_db(transaction=True)

Status = NotificationDelivery.Status


class SilentBroker:
    """Accepts MQTT connections and answers CONNECT, then acknowledges nothing: a publish to
    it stays in flight (loopback only)."""

    def __init__(self) -> None:
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self.publishes = threading.Event()
        self._connections: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._server.accept()
            except OSError:
                return
            self._connections.append(connection)
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        try:
            if connection.recv(4096):  # CONNECT
                connection.sendall(b"\x20\x02\x00\x00")  # CONNACK, accepted
            while data := connection.recv(65536):
                if data[0] >> 4 == 3:  # PUBLISH: never acknowledged
                    self.publishes.set()
        except OSError:
            pass

    def close(self) -> None:
        self._server.close()
        for connection in self._connections:
            connection.close()


@pytest.fixture
def silent_worker(settings, tmp_path):
    """A worker of its own for MQTT deliveries whose broker never acknowledges, with a short
    lease; this process sweeps with the same lease and sends to the real broker."""
    settings.NOTIFICATION_SENDING_LEASE_SECONDS = LEASE
    settings.NOTIFICATION_SWEEP_INTERVAL_SECONDS = 1
    broker = SilentBroker()
    queue = f"so-test-{uuid.uuid4().hex[:8]}"
    env = worker_environment(queue, NOTIFICATION_SENDING_LEASE_SECONDS=str(LEASE),
                             MQTT_BROKER_URL=f"mqtt://127.0.0.1:{broker.port}",
                             MQTT_TIMEOUT_SECONDS="60")
    process = start_worker("silent", [f"{queue}.mqtt"], env, tmp_path / "worker.log")
    yield process, f"{queue}.mqtt", broker
    stop_worker(process)
    broker.close()
    _forget_unacked(f"{queue}.mqtt")
    forget_queues(queue, f"{queue}.mqtt")


class BatchDeadClaimantTests:
    def test_a_batch_of_a_killed_worker_is_sent_again_after_about_one_lease(
            self, silent_worker, mqtt_broker):
        process, queue, broker = silent_worker
        receiver = MqttReceiver(*mqtt_broker, topic="test/batch-dead/#")
        try:
            deliveries = [make_delivery("MQTT", {"topic": f"test/batch-dead/{n}"},
                                        payload={"n": n}) for n in range(20)]
            celery_app.conf.task_always_eager = False
            try:
                deliver_batch_task.apply_async(args=[[str(d.id) for d in deliveries]],
                                               queue=queue)
            finally:
                celery_app.conf.task_always_eager = True
            assert broker.publishes.wait(30), "the worker published nothing"
            wait_for(lambda: NotificationDelivery.objects.filter(
                status=Status.SENDING).count() == 20, what="the batch claimed")

            os.kill(process.pid, signal.SIGKILL)
            process.wait()

            def resent() -> bool:
                deliveries_sweep()  # this process: eager, the real broker
                return not NotificationDelivery.objects.exclude(
                    status=Status.DELIVERED).exists()

            wait_for(resent, timeout=LEASE + 10, what="the batch to be sent again")
            arrived = sorted(json.loads(receiver.get().payload)["n"] for _ in deliveries)
        finally:
            receiver.close()
        assert arrived == list(range(20))
        assert set(NotificationDelivery.objects.values_list("attempts", flat=True)) == {2}
