"""The in-process stand-in for Celery beat (no broker: `make run`)."""
import threading
from collections.abc import Iterator

import pytest
from django.conf import settings as django_settings

from config.celery import app as celery_app
from config import scheduler
from notifications.models import NotificationDelivery
from config.scheduler import (
    start_in_process_scheduler,
    stop_in_process_scheduler,
)
from tests.concurrency import wait_for
from tests.endpoints import make_delivery

probe_runs: list[str] = []


@celery_app.task(name="tests.config.scheduler_probe")
def scheduler_probe() -> None:
    probe_runs.append("fast")


@celery_app.task(name="tests.config.scheduler_hourly_probe")
def scheduler_hourly_probe() -> None:
    probe_runs.append("slow")


@celery_app.task(name="tests.config.scheduler_failure")
def scheduler_failure() -> None:
    raise RuntimeError("a periodic task failed")


def every(seconds: float, task: str) -> dict:
    return {"task": task, "schedule": seconds}


@pytest.fixture
def eager(settings) -> Iterator:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    probe_runs.clear()
    yield settings
    stop_in_process_scheduler()


class InProcessSchedulerTests:
    def test_it_runs_beat_entries_repeatedly_until_stopped(self, eager):
        eager.CELERY_BEAT_SCHEDULE = {
            "probe": every(0.1, "tests.config.scheduler_probe"),
            "hourly": every(3600.0, "tests.config.scheduler_hourly_probe"),
        }
        thread = start_in_process_scheduler()
        assert isinstance(thread, threading.Thread) and thread.daemon
        assert start_in_process_scheduler() is thread  # idempotent: still one thread
        wait_for(lambda: len(probe_runs) >= 3, what="three scheduled runs")
        stop_in_process_scheduler()
        assert scheduler.stop_event.is_set() and not thread.is_alive()
        assert set(probe_runs) == {"fast"}  # runs happen in that thread, now ended: no more

    def test_it_keeps_running_when_a_task_fails(self, eager):
        eager.CELERY_BEAT_SCHEDULE = {
            "failure": every(0.05, "tests.config.scheduler_failure"),
            "unknown": every(0.05, "tests.notifications.no_such_task"),
            "probe": every(0.1, "tests.config.scheduler_probe"),
        }
        start_in_process_scheduler()
        wait_for(lambda: len(probe_runs) >= 3, what="three scheduled runs")

    def test_it_does_not_start_when_celery_has_a_broker(self, settings):
        settings.CELERY_TASK_ALWAYS_EAGER = False
        assert start_in_process_scheduler() is None


@pytest.mark.django_db(transaction=True)
class InProcessSweepTests:
    def test_it_sends_due_deliveries_without_a_broker(self, eager, http_sink):
        """Without a broker the sweeper entry of the real beat schedule is the only retry path."""
        eager.CELERY_BEAT_SCHEDULE = {
            "sweep-notifications": {**django_settings.CELERY_BEAT_SCHEDULE["sweep-notifications"],
                                    "schedule": 0.1},
        }
        delivery = make_delivery("HTTP", http_sink.properties())
        start_in_process_scheduler()
        wait_for(lambda: http_sink.requests, what="the sweeper to send the delivery")
        # Sent by the process's HTTP pool, which records the outcome right after the answer.
        wait_for(lambda: NotificationDelivery.objects.get(id=delivery.id).status
                 == NotificationDelivery.Status.DELIVERED, what="the delivery recorded")
        stop_in_process_scheduler()


class RunSoonTests:
    """`run_soon`: the nudge after a change, debounced in the scheduler's thread."""

    @pytest.fixture
    def running(self, eager):
        eager.CELERY_BEAT_SCHEDULE = {"hourly": every(3600.0,
                                                      "tests.config.scheduler_hourly_probe")}
        start_in_process_scheduler()
        return eager

    def test_requests_within_the_quiet_period_run_the_task_once(self, running):
        for _ in range(5):
            scheduler.run_soon("tests.config.scheduler_probe", quiet=0.3, max_delay=30)
        wait_for(lambda: probe_runs, what="the debounced run")
        threading.Event().wait(0.5)  # nothing else is due
        assert probe_runs == ["fast"]

    def test_requests_that_go_on_run_it_after_the_longest_delay(self, running):
        deadline = threading.Event()
        for _ in range(20):  # one every 0.05 s for a second: never quiet for 0.3 s
            scheduler.run_soon("tests.config.scheduler_probe", quiet=0.3, max_delay=0.4)
            deadline.wait(0.05)
        assert probe_runs, "the longest delay passed while requests kept coming"

    def test_without_the_thread_nothing_is_scheduled(self, eager):
        scheduler.run_soon("tests.config.scheduler_probe", quiet=0.01, max_delay=0.01)
        assert not scheduler._soon
