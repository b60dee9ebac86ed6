"""A real Celery worker for the integration tests: a separate process consuming a queue of its
own on the real Redis and working on the test database."""
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from config.celery import app as celery_app
from tests import services
from tests.concurrency import wait_until

ROOT = Path(__file__).resolve().parent.parent


def _database_url(name: str | None = None) -> str:
    """The test database's URL, or that of database `name` on the same server."""
    db = connection.settings_dict
    credentials = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return (f"postgres://{credentials}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/"
            f"{name or db['NAME']}")


def wait_for_output(process: subprocess.Popen, log_path: Path, ready: Callable[[str], bool],
                    what: str, timeout: float = 60) -> str:
    """Wait until `ready` holds for what `process` has written to `log_path`, and return
    that; fail naming `what` when the process exits first or `timeout` passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"{what} exited with {process.returncode}:\n"
                        f"{log_path.read_text()[-3000:]}", pytrace=False)
        output = log_path.read_text()
        if ready(output):
            return output
        time.sleep(0.2)
    pytest.fail(f"{what} did not start within {timeout} s:\n"
                f"{log_path.read_text()[-3000:]}", pytrace=False)


def _wait_until_ready(process: subprocess.Popen, log_path: Path, timeout: float = 60) -> None:
    wait_for_output(process, log_path, lambda output: " ready." in output, "The Celery worker",
                    timeout)


def worker_environment(queue: str, **overrides: str) -> dict[str, str]:
    """The environment of a worker process working on the test database and broker, with
    `queue` as its CELERY_TASK_DEFAULT_QUEUE (so `<queue>.http`/`<queue>.mqtt` for deliveries).
    Call it with the database unblocked."""
    return {**os.environ, "DATABASE_URL": _database_url(), "CELERY_TASK_DEFAULT_QUEUE": queue,
            "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
            "MQTT_BROKER_URL": settings.MQTT_BROKER_URL, "CONN_MAX_AGE": "0",
            "NOTIFICATION_RETRY_BASE_SECONDS": "1",
            # A breaker that opens and recovers within a test's patience.
            "NOTIFY_BREAKER_FAILURES": "2", "NOTIFY_BREAKER_COOLDOWN_SECONDS": "5",
            **overrides}


def start_worker(name: str, queues: list[str], env: dict[str, str],
                 log_path: Path) -> subprocess.Popen:
    """A `celery worker` (thread pool of 4) consuming `queues`, ready when this returns; its
    output goes to `log_path`."""
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "celery", "--app", "config", "worker", "--pool", "threads",
             "--concurrency", "4", "--queues", ",".join(queues), "--hostname", f"{name}@%h",
             "--loglevel", "INFO", "--without-gossip", "--without-mingle",
             "--without-heartbeat"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_until_ready(process, log_path)
    except BaseException:
        stop_worker(process)
        raise
    return process


def stop_worker(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def make_workers(logs: Path, unblocked: Callable[[], AbstractContextManager] = nullcontext,
                 **overrides: str) -> Iterator[Path]:
    """The workers `make worker` starts, on queues of their own that this process sends its
    tasks to meanwhile: one for the default and the MQTT delivery queues, one for the HTTP
    delivery queue; `overrides` are settings of both. `unblocked` opens the database for
    reading its settings (a test with a database mark has it open already). Yields the first
    one's log."""
    services.require_redis(settings.CELERY_BROKER_URL)
    queue = f"so-test-{uuid.uuid4().hex[:8]}"
    with unblocked():
        env = worker_environment(queue, **overrides)
    processes = []
    try:
        processes.append(start_worker("main", [queue, f"{queue}.mqtt"], env,
                                      logs / "worker.log"))
        processes.append(start_worker("http", [f"{queue}.http"], env, logs / "http-worker.log"))
        previous = celery_app.conf.task_default_queue, celery_app.conf.task_always_eager
        celery_app.conf.task_default_queue, celery_app.conf.task_always_eager = queue, False
        try:
            yield logs / "worker.log"
        finally:
            celery_app.conf.task_default_queue, celery_app.conf.task_always_eager = previous
    finally:
        for process in processes:
            stop_worker(process)
        forget_queues(queue, f"{queue}.mqtt", f"{queue}.http")


@pytest.fixture(scope="session")
def celery_worker(django_db_setup, django_db_blocker, tmp_path_factory):
    """`make_workers` for the session. Tests using it must be `transaction=True` so that the
    workers see their data. Yields the first one's log."""
    with make_workers(tmp_path_factory.mktemp("worker"), django_db_blocker.unblock) as log:
        yield log


def deliveries_settle(timeout: float = 20.0) -> None:
    """Before a test's tables are flushed while the session's workers run on: what they would
    still send is cancelled and the sends in flight are waited for (at most `timeout`), so
    that no worker transaction (a deferral, an outcome) runs into the flush. TRUNCATE takes
    its tables' locks one by one, and with a worker holding one of them and waiting for
    another, PostgreSQL ends the flush as a deadlock and the next test starts with this
    one's rows."""
    from notifications.models import NotificationDelivery

    Status = NotificationDelivery.Status
    unfinished = NotificationDelivery.objects.filter(status__in=(Status.PENDING,
                                                                 Status.SENDING))

    def settled() -> bool:
        unfinished.filter(status=Status.PENDING).update(status=Status.CANCELLED)
        return not unfinished.exists()

    wait_until(settled, timeout=timeout, interval=0.1)


def forget_queues(*queues: str) -> None:
    """Leave nothing of this session in the shared Redis (tasks the worker had not run yet,
    e.g. retries waiting for their countdown)."""
    import redis

    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    for queue in queues:
        client.delete(queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
    client.close()
