"""The real production server (`config.gunicorn`: nginx on loopback in front of gunicorn,
config/front.py) in a subprocess, working on the test database, for tests that need real
sockets and TLS handshakes."""
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.ports import reserved_port
from tests.worker import ROOT, _database_url


@contextmanager
def gunicorn(env: dict[str, str | None], log_path: Path) -> Iterator[int]:
    """Serve the service with `env` (a None value unsets the variable) on a free loopback
    port; yields the port."""
    with gunicorn_process(env, log_path) as (_, port):
        yield port


@contextmanager
def module_gunicorn(env: dict[str, str | None], django_db_blocker: object,
                    tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """`gunicorn` for a module-scoped fixture: with access to the test database, logging to a
    directory of its own."""
    with django_db_blocker.unblock():
        with gunicorn(env, tmp_path_factory.mktemp("gunicorn") / "log") as port:
            yield port


@contextmanager
def gunicorn_process(env: dict[str, str | None],
                     log_path: Path) -> Iterator[tuple[subprocess.Popen, int]]:
    """As `gunicorn`, yielding the master process too (tests that signal it)."""
    port = reserved_port()
    environment = {**os.environ, "DATABASE_URL": _database_url(), "HOST": "127.0.0.1",
                   "PORT": str(port), "WEB_CONCURRENCY": "1", "SERVE_STATIC": "false", **env}
    environment = {name: value for name, value in environment.items() if value is not None}
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--config", "python:config.gunicorn",
             "config.wsgi"], cwd=ROOT, env=environment, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
        try:
            _wait_until_listening(process, port, log_path)
            yield process, port
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
            # Workers still finishing (a client held a connection past the wait) would write
            # to the test database while the next test empties it: none outlives the test.
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()


def _wait_until_listening(process: subprocess.Popen, port: int, log_path: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"gunicorn exited with {process.returncode}:\n"
                        f"{log_path.read_text()[-3000:]}", pytrace=False)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            if "Booting worker" in log_path.read_text():
                return
        except OSError:
            pass
        time.sleep(0.1)
    pytest.fail(f"gunicorn did not start:\n{log_path.read_text()[-3000:]}", pytrace=False)
