"""The Celery tasks: deliver (with its own retry scheduling) and sweep, run eagerly."""
from datetime import timedelta

import pytest
from celery.signals import task_prerun
from django.utils import timezone

from notifications.models import NotificationDelivery
from notifications.selectors import deliveries_next_attempt
from notifications.tasks import deliver_batch_task, deliver_task
from tests.endpoints import make_delivery

pytestmark = pytest.mark.django_db

Status = NotificationDelivery.Status


@pytest.fixture
def task_runs() -> list:
    """Ids of the deliveries that Celery ran a send task for (worker or eager runs)."""
    runs: list = []

    def record(sender=None, args=None, **kwargs) -> None:
        if getattr(sender, "name", None) == deliver_task.name:
            runs.append(args[0])
        elif getattr(sender, "name", None) == deliver_batch_task.name:
            runs.extend(args[0])

    task_prerun.connect(record, weak=False)
    yield runs
    task_prerun.disconnect(record)


class DeliverTaskTests:
    def test_it_delivers_and_returns_the_status(self, http_sink):
        delivery = make_delivery("HTTP", http_sink.properties())
        assert deliver_task.apply(args=[str(delivery.id)]).get() == Status.DELIVERED
        assert len(http_sink.requests) == 1

    def test_it_does_not_reschedule_itself_when_run_eagerly(self, http_sink, task_runs):
        http_sink.status = 502
        delivery = make_delivery("HTTP", http_sink.properties())
        assert deliver_task.apply(args=[str(delivery.id)]).get() == Status.PENDING
        assert task_runs == [str(delivery.id)]
        assert len(http_sink.requests) == 1

    def test_it_reschedules_itself_after_a_transient_failure_on_a_worker(self, http_sink,
                                                                         task_runs):
        """Called like a worker does (not eager), it enqueues its next attempt; the eager
        test broker runs that at once, before it is due, so it only returns PENDING."""
        http_sink.status = 503
        delivery = make_delivery("HTTP", http_sink.properties())
        assert deliver_task(str(delivery.id)) == Status.PENDING
        assert task_runs == [str(delivery.id)]
        assert len(http_sink.requests) == 1

    def test_it_does_not_reschedule_a_finished_delivery(self, http_sink, task_runs):
        http_sink.status = 404
        delivery = make_delivery("HTTP", http_sink.properties())
        assert deliver_task(str(delivery.id)) == Status.FAILED
        assert task_runs == []


class DeliverySecondsUntilDueTests:
    def test_it_counts_down_to_the_next_attempt(self):
        later = make_delivery(next_attempt_at=timezone.now() + timedelta(seconds=30))
        assert 29 < deliveries_next_attempt(delivery_ids=[later.id])[0] <= 30
        overdue = make_delivery(next_attempt_at=timezone.now() - timedelta(seconds=30))
        assert deliveries_next_attempt(delivery_ids=[overdue.id]) == (0, overdue.protocol)

    def test_it_is_none_when_no_attempt_is_waiting(self):
        delivered = make_delivery(status=Status.DELIVERED)
        assert deliveries_next_attempt(delivery_ids=[delivered.id]) is None
