"""The database away and back, under the real server: while PostgreSQL is stopped, every request
that needs it is a 503 EXTERNAL_SERVER_ERROR envelope within the connect timeout (never a 500);
once it is back, no request fails on a connection the server kept from before. The PostgreSQL
is a private one of this test (tests/private_servers.py), stopped and started again."""
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.private_servers import PrivateServer, PrivateServers
from tests.web_server import gunicorn
from tests.worker import ROOT

STORE = "/serviceorchestration/orchestration/mgmt/simple-store"
CONNECT_TIMEOUT_SECONDS = 2


@pytest.fixture(scope="module")
def postgres() -> Iterator[PrivateServer]:
    """A private, migrated PostgreSQL for this module."""
    servers = PrivateServers()
    try:
        server = servers.start_postgres("so_outage")
        for command in ("ensure_database", "migrate"):
            done = subprocess.run([sys.executable, "manage.py", command], cwd=ROOT, text=True,
                                  capture_output=True, timeout=300,
                                  env={**os.environ, "DATABASE_URL": server.url})
            assert done.returncode == 0, done.stderr[-3000:]
        yield server
    finally:
        servers.stop_all()


def send(port: int, path: str, body: dict) -> tuple[int, dict, float]:
    """Status, JSON answer and seconds taken of a POST as the operator."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method="POST",
                                     data=json.dumps(body).encode(),
                                     headers={"Authorization": "Bearer SYSTEM//Sysop",
                                              "Content-Type": "application/json"})
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            status, answer = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, answer = error.code, error.read()
    return status, json.loads(answer), time.monotonic() - started


def requests_needing_the_database(port: int, phase: str,
                                  rounds: int) -> list[tuple[int, dict, float]]:
    """A read and a write (a rule of a new consumer) per round, 8 at a time (the server's
    threads each keep a connection)."""
    calls = []
    for round_number in range(rounds):
        calls.append((f"{STORE}/query", {}))
        calls.append((f"{STORE}/create", {"entries": [{
            "consumer": f"{phase}Consumer{round_number}",
            "serviceInstanceId": "OutageProvider|outageService|1.0.0", "priority": 1}]}))
    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(lambda call: send(port, *call), calls))


def test_the_database_away_is_503_and_back_is_served_at_once(postgres, tmp_path):
    env = {"DATABASE_URL": postgres.url, "CELERY_BROKER_URL": "", "MQTT_BROKER_URL": "",
           "WEB_THREADS": "8", "CONN_MAX_AGE": "600",
           "DATABASE_CONNECT_TIMEOUT_SECONDS": str(CONNECT_TIMEOUT_SECONDS)}
    with gunicorn(env, tmp_path / "gunicorn.log") as port:
        before = requests_needing_the_database(port, "Before", 8)
        assert {status for status, _, _ in before} == {200, 201}, before

        with postgres.executor.stopped():
            away = requests_needing_the_database(port, "Away", 4)
        back = requests_needing_the_database(port, "Back", 16)

    for status, answer, seconds in away:
        assert status == 503, answer
        assert answer["exceptionType"] == "EXTERNAL_SERVER_ERROR"
        assert answer["errorMessage"].startswith(
            "The database is unavailable; the request was not applied, please retry")
        assert answer["origin"].startswith(f"POST {STORE}/")
        assert seconds < CONNECT_TIMEOUT_SECONDS + 5
    assert [status for status, _, _ in back] == [200, 201] * 16, back
    log = (tmp_path / "gunicorn.log").read_text()
    assert "Unhandled exception" not in log
    assert "Database unavailable on POST" in log
