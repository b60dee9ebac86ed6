"""The README's production processes as an operator starts them: the Procfile under honcho
(`make run`, `make worker`, `make beat`) against the real PostgreSQL, Redis and Mosquitto,
on a database `make run` creates; and `make beat`, which keeps its schedule in var/."""
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings

from config.celery import app as celery_app
from tests import services
from tests.concurrency import wait_for, wait_until
from tests.databases import database_exists, throwaway_database
from tests.ports import reserved_port
from tests.web_server import gunicorn_process
from tests.worker import ROOT, _database_url, forget_queues, wait_for_output

DATABASE = "so_deploy_honcho"
# On top of the README's block: a small scale, beat's sweep every second, no MQTT interface.
ENVIRONMENT = {"WEB_CONCURRENCY": "1", "WORKER_CONCURRENCY": "2", "NOTIFY_HTTP_CONCURRENCY": "2",
               "NOTIFICATION_SWEEP_INTERVAL_SECONDS": "1", "MQTT_API_ENABLED": "false"}


@pytest.fixture
def queue() -> Iterator[str]:
    """A default queue of the test's own on the shared Redis, forgotten afterwards."""
    services.require_redis(settings.CELERY_BROKER_URL)
    name = f"so-deploy-{uuid.uuid4().hex[:8]}"
    yield name
    forget_queues(name, f"{name}.mqtt", f"{name}.http")


def _environment(queue: str, **overrides: str) -> dict[str, str]:
    return {**os.environ, **ENVIRONMENT, "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
            "MQTT_BROKER_URL": settings.MQTT_BROKER_URL, "CELERY_TASK_DEFAULT_QUEUE": queue,
            **overrides}


def _processes_of(queue: str) -> list[int]:
    """The processes started with this test's environment, wherever they are in the tree."""
    marker = f"CELERY_TASK_DEFAULT_QUEUE={queue}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:  # gone meanwhile
            pass
    return found


@contextmanager
def _started(command: list[str], env: dict[str, str], log_path: Path,
             queue: str) -> Iterator[subprocess.Popen]:
    """Run `command` in the repository; on exit send it SIGTERM, then kill whatever of its
    processes is still there after a few seconds (a failed test leaves nothing running), and
    record them as the process's `outlived`."""
    with log_path.open("w") as log:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield process
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        finally:
            wait_until(lambda: not _processes_of(queue), timeout=5, interval=0.1)
            outlived = _processes_of(queue)
            for pid in outlived:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            process.wait()
            process.outlived = outlived


def _tasks_run(worker: str) -> dict[str, int]:
    """How many of each task the Celery worker `worker` has run (its remote control)."""
    replies = celery_app.control.inspect(destination=[worker], timeout=2).stats() or {}
    return replies.get(worker, {}).get("total", {})


def _subscribe(port: int, topic: str) -> int:
    requirement = {"serviceRequirement": {"serviceDefinition": "temperatureInfo"}}
    body = {"orchestrationRequest": requirement,
            "notifyInterface": {"protocol": "MQTT", "properties": {"topic": topic}}}
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/serviceorchestration/orchestration/subscribe?trigger=true",
        data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json",
                 "Authorization": "Bearer SYSTEM//temperature-consumer"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return answer.status


def _echo(port: int) -> str | None:
    try:
        with urllib.request.urlopen(
                f"http://127.0.0.1:{port}/serviceorchestration/monitor/echo", timeout=2) as answer:
            return answer.read().decode()
    except OSError:
        return None


def test_honcho_starts_web_worker_and_beat_on_a_new_database_and_stops_them(queue, tmp_path,
                                                                             mqtt_receiver):
    services.require_postgres()
    port, log_path = reserved_port(), tmp_path / "honcho.log"
    # The README's steps: install once (three makes at once would each set up the virtualenv).
    subprocess.run(["make", "--silent", "install"], cwd=ROOT, check=True, timeout=600)
    with throwaway_database(DATABASE) as url:
        env = _environment(queue, DATABASE_URL=url, HOST="127.0.0.1", PORT=str(port),
                           STATIC_ROOT=str(tmp_path / "static"))
        command = [str(Path(sys.executable).parent / "honcho"), "start", "web", "worker", "beat"]
        with _started(command, env, log_path, queue) as honcho:
            output = wait_for_output(honcho, log_path, lambda output: all((
                re.search(r"main@\S+ ready\.", output), re.search(r"http@\S+ ready\.", output),
                "beat: Starting..." in output, _echo(port) == "Got it!")),
                "honcho (web, worker, beat)", timeout=180)
            # Beat sends the sweep every second (the worker logs it at DEBUG only).
            worker = re.search(r"(main@\S+) ready\.", output)[1]
            wait_for(lambda: _tasks_run(worker).get("notifications.sweep", 0) >= 2,
                     timeout=30, what="the worker running beat's sweeps")
            # The README's subscribe: the web enqueues, the worker evaluates it on the
            # database `make run` created and migrated and publishes the result.
            status = _subscribe(port, mqtt_receiver.topic)
            assert status == 201
            notification = json.loads(mqtt_receiver.get(timeout=30).payload)
            assert notification["payload"]["results"] == []
            assert database_exists(DATABASE)
            assert f"web.1    | Created database {DATABASE}" in output
            assert (tmp_path / "static" / "admin").is_dir()
        # SIGTERM reached every process, each stopped by itself (honcho kills after 5 s).
        assert honcho.returncode == 143
        log = log_path.read_text()
        assert {name for name in ("web.1", "worker.1", "beat.1")
                if f"{name} stopped" in log} == {"web.1", "worker.1", "beat.1"}
        assert "SIGKILL" not in log and "Warm shutdown" in log, log[-3000:]
        assert honcho.outlived == [] and _echo(port) is None


def test_make_beat_keeps_its_schedule_in_var(queue, tmp_path):
    started = time.time()
    top_level = set(os.listdir(ROOT))
    log_path = tmp_path / "beat.log"
    with _started(["make", "beat"], _environment(queue), log_path, queue) as beat:
        wait_for_output(beat, log_path, lambda output: "beat: Starting..." in output,
                        "make beat")
    assert beat.outlived == []
    schedule = [path for path in (ROOT / "var").glob("celerybeat-schedule*")
                if path.stat().st_mtime >= started]
    assert schedule, sorted((ROOT / "var").iterdir())
    assert f"db -> {ROOT / 'var' / 'celerybeat-schedule'}" in log_path.read_text()
    assert set(os.listdir(ROOT)) - top_level <= {"var"}  # a fresh clone has no var/ yet
    ignored = subprocess.run(["git", "check-ignore", *map(str, schedule)], cwd=ROOT,
                             capture_output=True, text=True)
    assert ignored.returncode == 0 and len(ignored.stdout.splitlines()) == len(schedule)


def _run_until_exit(tmp_path: Path, **env: str | None) -> tuple[int, str]:
    """gunicorn's exit status and output when started with `env`, given 60 s to stop by
    itself; whatever it started is killed afterwards."""
    log_path = tmp_path / "gunicorn.log"
    environment = {**os.environ, "DATABASE_URL": _database_url(), "WEB_CONCURRENCY": "1",
                   "SERVE_STATIC": "false", **env}
    environment = {name: value for name, value in environment.items() if value is not None}
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--config", "python:config.gunicorn",
             "config.wsgi"], cwd=ROOT, env=environment, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        return process.wait(timeout=60), log_path.read_text()
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()


class DeclaredPolicyExposureTests:
    """The web process refuses the declared policy where other hosts reach it (issue 29,
    item 3; identity/exposure.py): anyone there could send `Bearer SYSTEM//Sysop`."""

    pytestmark = pytest.mark.django_db(transaction=True)

    def test_it_refuses_declared_on_a_non_loopback_address_in_one_line(self, tmp_path):
        port = reserved_port()
        status, output = _run_until_exit(tmp_path, HOST="0.0.0.0", PORT=str(port),
                                         IDENTITY_DECLARED_ON_NETWORK=None,
                                         AUTHENTICATION_POLICY=None)
        assert status != 0, output
        refusals = [line for line in output.splitlines() if "Refusing to start" in line]
        assert len(refusals) == 1, output
        assert "[ERROR] Refusing to start: AUTHENTICATION_POLICY=declared on the " \
            f"non-loopback address 0.0.0.0:{port} " in refusals[0]
        assert "set IDENTITY_DECLARED_ON_NETWORK=true" in refusals[0]
        assert "Listening at" not in output and "Booting worker" not in output

    def test_it_starts_with_declared_on_the_network_when_the_setting_allows_it(self, tmp_path):
        """Listens on every address for a moment; the test connects to loopback only."""
        log_path = tmp_path / "gunicorn.log"
        env = {"HOST": "0.0.0.0", "IDENTITY_DECLARED_ON_NETWORK": "true",
               "AUTHENTICATION_POLICY": None}
        with gunicorn_process(env, log_path) as (_, port):
            wait_for(lambda: _echo(port) == "Got it!", timeout=60, what="echo")
        assert "[WARNING] Identity policy: declared (callers name themselves; for closed " \
            f"networks and development only); on the non-loopback address 0.0.0.0:{port}, " \
            "allowed by IDENTITY_DECLARED_ON_NETWORK=true" in log_path.read_text()

    @pytest.mark.parametrize("policy, named", [
        ("declared", "[INFO] Identity policy: declared (callers name themselves; for closed "
                     "networks and development only)\n"),
        ("token", "[INFO] Identity policy: token (identity tokens issued by this service)\n"),
    ])
    def test_it_starts_on_loopback_and_names_the_policy_in_force(self, tmp_path, policy, named):
        log_path = tmp_path / "gunicorn.log"
        env = {"AUTHENTICATION_POLICY": policy, "IDENTITY_DECLARED_ON_NETWORK": None}
        with gunicorn_process(env, log_path) as (_, port):  # HOST=127.0.0.1, as `make run`
            wait_for(lambda: _echo(port) == "Got it!", timeout=60, what="echo")
        assert named in log_path.read_text()


def test_gunicorn_names_a_tls_file_it_cannot_read_in_one_line(tmp_path):
    """compose's ./certs left empty: the line says which setting and file, instead of a
    traceback (issue 29, item 3)."""
    missing = tmp_path / "SimpleStoreServiceOrchestration.pem"
    status, output = _run_until_exit(tmp_path, HOST="127.0.0.1", PORT=str(reserved_port()),
                                     AUTHENTICATION_POLICY="token", TLS_CERT_FILE=str(missing),
                                     TLS_KEY_FILE=str(tmp_path / "key.pem"))
    assert status == 1, output
    assert f"[ERROR] Refusing to start: TLS_CERT_FILE={missing} is not a readable file " \
        "(HTTPS; docs/operations.md, Secure production setup)\n" in output
    assert "Traceback" not in output and "Listening at" not in output


def _children(pid: int) -> list[tuple[int, str]]:
    """(pid, command name) of the direct children of `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                name = (entry / "comm").read_text().strip()
            except (FileNotFoundError, ProcessLookupError, IndexError):
                continue
            if int(fields[1]) == pid:
                found.append((int(entry.name), name))
    return found


class WebFrontTests:
    """How the web process starts and stops with nginx in front (config/front.py; issue 35,
    a new user's first hour)."""

    pytestmark = pytest.mark.django_db(transaction=True)

    def test_a_second_server_on_the_same_port_refuses_and_the_first_serves_on(self, tmp_path):
        with gunicorn_process({}, tmp_path / "first.log") as (_, port):
            wait_for(lambda: _echo(port) == "Got it!", timeout=60, what="echo")
            socket_file = ROOT / "var" / f"nginx-{port}" / "gunicorn.sock"
            conf = (ROOT / "var" / f"nginx-{port}" / "nginx.conf").read_text()
            status, output = _run_until_exit(tmp_path, HOST="127.0.0.1", PORT=str(port))
            assert status == 1, output
            assert f"[ERROR] Refusing to start: cannot listen on 127.0.0.1:{port} " in output
            assert "Listening at" not in output and "Traceback" not in output
            assert socket_file.exists()
            assert (ROOT / "var" / f"nginx-{port}" / "nginx.conf").read_text() == conf
            time.sleep(1)
            assert _echo(port) == "Got it!"

    def test_nginx_failing_stops_the_web_process_with_status_1(self, tmp_path):
        log_path = tmp_path / "gunicorn.log"
        with gunicorn_process({}, log_path) as (master, port):
            wait_for(lambda: _echo(port) == "Got it!", timeout=60, what="echo")
            nginx = [pid for pid, name in _children(master.pid) if name == "nginx"]
            assert len(nginx) == 1, _children(master.pid)
            workers = [pid for pid, _ in _children(nginx[0])]
            assert workers
            os.kill(nginx[0], signal.SIGKILL)
            assert master.wait(timeout=60) == 1
            # Its workers, left behind, are killed too: they would keep the port.
            wait_for(lambda: not any(Path(f"/proc/{pid}").exists() for pid in workers),
                     timeout=10, what="nginx's workers to end")
        assert "[ERROR] nginx stopped unexpectedly; stopping" in log_path.read_text()

    def test_ctrl_c_stops_everything_without_an_error(self, tmp_path):
        """The terminal's SIGINT reaches the foreground process group: the master and its
        workers (nginx has a group of its own, which the master stops)."""
        log_path = tmp_path / "gunicorn.log"
        with gunicorn_process({}, log_path) as (master, port):
            wait_for(lambda: _echo(port) == "Got it!", timeout=60, what="echo")
            [nginx] = [pid for pid, name in _children(master.pid) if name == "nginx"]
            os.killpg(master.pid, signal.SIGINT)
            assert master.wait(timeout=60) == 0
            assert not Path(f"/proc/{nginx}").exists()  # stopped by the master, not orphaned
        output = log_path.read_text()
        assert "[ERROR]" not in output and "Traceback" not in output, output
