"""What config/celery.py sets up in a worker process, as a web process has it: the database
connection kept from task to task (and replaced, without failing a task, when it broke
between two), and the pull snapshot loaded when a pool process starts. Against a real
worker process (prefork, one child, as `make worker-main`), the real Redis and the test
database, watched through pg_stat_activity and the worker's log."""
import subprocess
import sys
import time
import uuid

import pytest
from django.conf import settings
from django.db import connection

from config.celery import app as celery_app
from tests import services
from tests.concurrency import wait_until
from tests.worker import ROOT, _database_url, _wait_until_ready, forget_queues, stop_worker
from tests.worker import worker_environment

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def worker(tmp_path, django_db_blocker):
    """(application_name of its connections, log path, queue) of a running worker."""
    services.require_redis(settings.CELERY_BROKER_URL)
    name = f"so-test-reuse-{uuid.uuid4().hex[:8]}"
    queue = name
    with django_db_blocker.unblock():
        env = worker_environment(queue, CONN_MAX_AGE="60",
                                 DATABASE_URL=f"{_database_url()}?application_name={name}")
    log = tmp_path / "worker.log"
    with log.open("w") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "celery", "--app", "config", "worker", "--pool", "prefork",
             "--concurrency", "1", "--queues", queue, "--hostname", f"{name}@%h",
             "--loglevel", "INFO", "--without-gossip", "--without-mingle",
             "--without-heartbeat"],
            cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT)
    eager, celery_app.conf.task_always_eager = celery_app.conf.task_always_eager, False
    try:
        _wait_until_ready(process, log)
        yield name, log, queue
    finally:
        celery_app.conf.task_always_eager = eager
        stop_worker(process)
        forget_queues(queue)


def _backends(name: str) -> list[tuple[int, str, object]]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid, state, state_change FROM pg_stat_activity "
                       "WHERE application_name = %s", [name])
        return cursor.fetchall()


def _run_task(name: str, queue: str, log) -> list[int]:
    """Send a task that queries the database (a batch send of a delivery that does not exist:
    its claim is an UPDATE) to the worker; return the pids of its connections once the task
    has finished (its success logged: not a periodic task's, whose lines are DEBUG)."""
    # The snapshot's first load holds a connection of its own for as long as it takes.
    wait_until(lambda: "Pull snapshot loaded" in log.read_text(), timeout=30)
    done = log.read_text().count("succeeded")
    celery_app.send_task("notifications.deliver_batch", args=[[str(uuid.uuid4())]],
                         queue=queue)
    if not wait_until(lambda: log.read_text().count("succeeded") != done, timeout=30):
        pytest.fail(f"the task did not succeed:\n{log.read_text()[-3000:]}", pytrace=False)
    # The child's pull snapshot thread opens a connection of its own for each refresh and
    # closes it (orchestration/snapshot/state.py): the connections held across a short
    # while are the task's.
    held = set(pid for pid, _, _ in _backends(name))
    for _ in range(3):
        time.sleep(0.1)
        held &= {pid for pid, _, _ in _backends(name)}
    return sorted(held)


class WorkerConnectionTests:
    def test_one_connection_serves_task_after_task(self, worker):
        name, log, queue = worker
        pids = [_run_task(name, queue, log) for _ in range(5)]
        assert len(pids[0]) == 1
        assert pids == [pids[0]] * 5  # Celery's own default would open one per task

    def test_a_connection_broken_between_tasks_is_replaced_without_failing_a_task(
            self, worker):
        name, log, queue = worker
        [first] = _run_task(name, queue, log)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [first])
        # pg_terminate_backend only signals: the session is broken once its backend is gone.
        assert wait_until(lambda: first not in {pid for pid, _, _ in _backends(name)},
                          timeout=10)
        [second] = _run_task(name, queue, log)
        assert second != first
        text = log.read_text()
        assert "Traceback" not in text and "OperationalError" not in text, text
        assert text.count("succeeded") == 2


class WorkerSnapshotTests:
    def test_a_pool_process_loads_its_pull_snapshot_when_it_starts(self, worker):
        name, log, queue = worker
        if not wait_until(lambda: "Pull snapshot loaded" in log.read_text(), timeout=30):
            pytest.fail(f"no snapshot loaded:\n{log.read_text()[-3000:]}", pytrace=False)
        assert "succeeded" not in log.read_text()  # before any task asked for it
