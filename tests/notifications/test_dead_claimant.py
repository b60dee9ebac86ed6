"""A worker that dies mid-send is detected after about one short sending lease, because a live
worker renews its claim while it sends (issue 10, item 9); a slow send of a live worker is
never handed to a second sender."""
import json
import os
import signal
import uuid

import pytest
import redis
from django.conf import settings as django_settings

from config.celery import app as celery_app
from notifications.models import NotificationDelivery
from notifications.services import LEASE_EXPIRED
from notifications.sweeping import deliveries_sweep
from notifications.tasks import deliver_task
from tests.concurrency import wait_for, wait_until
from tests.endpoints import make_delivery
from tests.worker import forget_queues, start_worker, stop_worker, worker_environment

pytestmark = pytest.mark.django_db(transaction=True)

Status = NotificationDelivery.Status
LEASE = 3  # seconds: the shortest lease the settings accept


@pytest.fixture
def lone_worker(settings, tmp_path):
    """A worker of its own for the HTTP deliveries (it may be killed), with a short lease and
    a read timeout longer than the slow sends here; this process sweeps with the same lease."""
    settings.NOTIFICATION_SENDING_LEASE_SECONDS = LEASE
    settings.NOTIFICATION_SWEEP_INTERVAL_SECONDS = 1
    queue = f"so-test-{uuid.uuid4().hex[:8]}"
    env = worker_environment(queue, NOTIFICATION_SENDING_LEASE_SECONDS=str(LEASE),
                             NOTIFY_HTTP_TIMEOUT_SECONDS="60")
    process = start_worker("lone", [f"{queue}.http"], env, tmp_path / "worker.log")
    yield process, f"{queue}.http"
    stop_worker(process)
    _forget_unacked(f"{queue}.http")
    forget_queues(queue, f"{queue}.http")


def _forget_unacked(queue: str) -> None:
    """The killed worker's task stays unacknowledged in Redis (to be redelivered after the
    visibility timeout); remove it so that nothing of the test is left behind."""
    client = redis.Redis.from_url(django_settings.CELERY_BROKER_URL)
    for tag, entry in client.hgetall("unacked").items():
        if json.loads(entry)[-1] == queue:
            client.hdel("unacked", tag)
            client.zrem("unacked_index", tag)
    client.close()


def send_on(queue: str, delivery: NotificationDelivery) -> None:
    """Enqueue the delivery's task for the lone worker (this test's Celery is otherwise eager)."""
    celery_app.conf.task_always_eager = False
    try:
        deliver_task.apply_async(args=[str(delivery.id)], kwargs={"protocol": delivery.protocol},
                                 queue=queue)
    finally:
        celery_app.conf.task_always_eager = True


def status_of(delivery: NotificationDelivery) -> str:
    return NotificationDelivery.objects.values_list("status", flat=True).get(id=delivery.id)


class DeadClaimantTests:
    def test_a_killed_workers_delivery_is_resent_after_about_one_lease(self, lone_worker,
                                                                        http_sink):
        process, queue = lone_worker
        http_sink.delay = 60  # holds the worker's request: the send is in flight
        delivery = make_delivery("HTTP", http_sink.properties())
        send_on(queue, delivery)
        wait_for(lambda: http_sink.requests, what="the worker's request")
        assert status_of(delivery) == Status.SENDING

        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        http_sink.delay = 0

        def resent() -> bool:
            deliveries_sweep()
            return len(http_sink.requests) >= 2

        # Not after the old 120 s lease, nor any long send timeout: after about one lease.
        wait_for(resent, timeout=LEASE + 6, what="the delivery to be sent again")
        delivery.refresh_from_db()
        assert (delivery.status, delivery.attempts, delivery.last_error) == \
            (Status.DELIVERED, 2, "")
        assert len(http_sink.requests) == 2

    def test_a_slow_send_of_a_live_worker_is_never_sent_twice(self, lone_worker, http_sink):
        _, queue = lone_worker
        http_sink.delay = 4 * LEASE
        delivery = make_delivery("HTTP", http_sink.properties())
        send_on(queue, delivery)
        wait_for(lambda: http_sink.requests, what="the worker's request")

        def sent() -> bool:
            deliveries_sweep()  # sweeping all along: the claim must never look dead
            return status_of(delivery) != Status.SENDING

        wait_until(sent, timeout=4 * LEASE + 20, interval=0.2)
        delivery.refresh_from_db()
        assert (delivery.status, delivery.attempts) == (Status.DELIVERED, 1)
        assert delivery.last_error != LEASE_EXPIRED
        assert len(http_sink.requests) == 1
