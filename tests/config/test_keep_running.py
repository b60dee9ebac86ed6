"""`config.keep_running` (what `make worker-main`, `make worker-http` and `make beat` run their
Celery process under): a process that dies on its own is started again, one that is told to
stop stays stopped, and nothing outlives the wrapper. With a real worker: a Redis restart, and
the worker's own death, leave tasks served within seconds."""
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from config.celery import app as celery_app
from tests.concurrency import wait_for, wait_until
from tests.private_servers import PrivateServers
from tests.worker import ROOT, wait_for_output, worker_environment

WRAPPER = [sys.executable, "-m", "config.keep_running", "--"]

# Appends its pid to argv[1], then exits with argv[2] while fewer than argv[3] runs are
# recorded, else sleeps argv[4] seconds and exits 0.
COMMAND = """
import os, sys, time
from pathlib import Path
runs = Path(sys.argv[1])
with runs.open("a") as out:
    out.write(f"{os.getpid()}\\n")
if len(runs.read_text().split()) < int(sys.argv[3]):
    sys.exit(int(sys.argv[2]))
time.sleep(float(sys.argv[4]))
"""


# The wrapper, with another SIGTERM raised at every line its signal handler runs (not the
# handlers this starts inside it): each runs inside the first, at that point.
SIGNALLED_AGAIN = [sys.executable, "-c", """
import signal, sys
from config import keep_running

handling = 0

def line(frame, event, arg):
    global handling
    if event == "return" and frame.f_code.co_name == "pass_on":
        handling -= 1
    elif event == "line" and handling == 1:
        signal.raise_signal(signal.SIGTERM)
    return line

def call(frame, event, arg):
    global handling
    handling += frame.f_code.co_name == "pass_on"
    return line if handling else None

sys.settrace(call)
sys.exit(keep_running.main(sys.argv[1:]))
""", "--"]


def wrapped(runs: Path, status: int, failures: int, sleep: float, log: Path,
            wrapper: list[str] = WRAPPER) -> subprocess.Popen:
    with log.open("w") as err:
        return subprocess.Popen([*wrapper, sys.executable, "-c", COMMAND, str(runs),
                                 str(status), str(failures + 1), str(sleep)],
                                cwd=ROOT, stderr=err, start_new_session=True)


def pids(runs: Path) -> list[int]:
    return [int(pid) for pid in runs.read_text().split()] if runs.exists() else []


class KeepRunningTests:
    def test_a_command_that_fails_is_started_again_until_it_succeeds(self, tmp_path):
        runs, log = tmp_path / "runs", tmp_path / "log"
        wrapper = wrapped(runs, status=3, failures=2, sleep=0, log=log)

        assert wrapper.wait(timeout=30) == 0
        assert len(pids(runs)) == 3
        assert log.read_text().splitlines() == [
            f"keep_running: {sys.executable} ended with status 3; starting it again in 1 s",
            f"keep_running: {sys.executable} ended with status 3; starting it again in 2 s"]

    def test_a_command_killed_by_someone_else_is_started_again(self, tmp_path):
        runs, log = tmp_path / "runs", tmp_path / "log"
        wrapper = wrapped(runs, status=0, failures=0, sleep=60, log=log)
        wait_for(lambda: len(pids(runs)) == 1, what="the first run")

        os.kill(pids(runs)[0], signal.SIGKILL)

        wait_for(lambda: len(pids(runs)) == 2, what="the second run")
        assert "ended with status 137; starting it again in 1 s" in log.read_text()
        wrapper.send_signal(signal.SIGTERM)
        assert wrapper.wait(timeout=30) == 128 + signal.SIGTERM

    @pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT])
    def test_a_stop_signal_is_passed_on_once_and_stops_it_for_good(self, tmp_path, number):
        runs, log = tmp_path / "runs", tmp_path / "log"
        wrapper = wrapped(runs, status=0, failures=0, sleep=60, log=log)
        wait_for(lambda: len(pids(runs)) == 1, what="the first run")
        command = psutil.Process(pids(runs)[0])

        os.killpg(wrapper.pid, number)  # as a terminal or honcho does: to the wrapper's group

        assert wrapper.wait(timeout=30) == 128 + number
        assert not command.is_running()
        assert len(pids(runs)) == 1 and "keep_running:" not in log.read_text()

    def test_a_stop_signal_arriving_while_one_is_handled_still_stops_it(self, tmp_path):
        """As honcho's SIGTERM and make's do: the handler hung on its own lock before."""
        runs, log = tmp_path / "runs", tmp_path / "log"
        wrapper = wrapped(runs, status=0, failures=0, sleep=60, log=log,
                          wrapper=SIGNALLED_AGAIN)
        wait_for(lambda: len(pids(runs)) == 1, what="the first run")
        command = psutil.Process(pids(runs)[0])

        wrapper.send_signal(signal.SIGTERM)

        try:
            status = wrapper.wait(timeout=10)
        except subprocess.TimeoutExpired:
            wrapper.kill()  # the command ends with it
            raise
        assert status == 128 + signal.SIGTERM
        assert not command.is_running()

    def test_the_command_ends_with_a_wrapper_killed_outright(self, tmp_path):
        runs, log = tmp_path / "runs", tmp_path / "log"
        wrapper = wrapped(runs, status=0, failures=0, sleep=60, log=log)
        wait_for(lambda: len(pids(runs)) == 1, what="the first run")
        command = psutil.Process(pids(runs)[0])

        wrapper.kill()
        wrapper.wait(timeout=30)

        wait_for(lambda: not command.is_running() or command.status() == psutil.STATUS_ZOMBIE,
                 what="the command to end with its wrapper")


@pytest.fixture
def redis_server():
    servers = PrivateServers()
    try:
        yield servers.start_redis()
    finally:
        servers.stop_all()


def served(broker: str, log: Path, queue: str, timeout: float) -> bool:
    """Whether a task sent now through `broker` is done by the worker (its log says so)
    within `timeout`: a batch send of a delivery that does not exist (not a periodic task,
    whose lines are DEBUG)."""
    with celery_app.connection_for_write(broker) as connection:
        task_id = celery_app.send_task("notifications.deliver_batch",
                                       args=[[str(uuid.uuid4())]], queue=queue,
                                       producer=connection.Producer()).id
    return wait_until(lambda: f"Task notifications.deliver_batch[{task_id}] succeeded"
                      in log.read_text(), timeout=timeout)


@pytest.mark.filterwarnings("ignore::celery.exceptions.AlwaysEagerIgnored")
@pytest.mark.django_db(transaction=True)
def test_a_worker_serves_tasks_after_a_redis_restart_and_after_its_own_death(
        redis_server, tmp_path):
    queue, log = f"so-test-keep-{uuid.uuid4().hex[:8]}", tmp_path / "worker.log"
    env = worker_environment(queue, CELERY_BROKER_URL=redis_server.url)
    with log.open("w") as out:
        worker = subprocess.Popen(
            [*WRAPPER, sys.executable, "-m", "celery", "--app", "config", "worker",
             "--hostname", f"{queue}@%h", "--queues", queue, "--pool", "threads",
             "--concurrency", "2", "--loglevel", "INFO", "--without-gossip",
             "--without-mingle", "--without-heartbeat"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for_output(worker, log, lambda output: " ready." in output, "the worker")
        assert served(redis_server.url, log, queue, timeout=20)

        with redis_server.executor.stopped():
            time.sleep(3)  # the worker loses its broker
        assert served(redis_server.url, log, queue, timeout=15), log.read_text()[-3000:]

        [celery] = psutil.Process(worker.pid).children()
        celery.kill()  # as when it dies of an error of its own
        wait_for_output(worker, log, lambda output: output.count(" ready.") == 2,
                        "the restarted worker")
        assert served(redis_server.url, log, queue, timeout=20), log.read_text()[-3000:]
        assert "ended with status 137; starting it again in 1 s" in log.read_text()
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(timeout=60)
