"""The embedded default (no DATABASE_URL: a SQLite file; no broker: tasks and the periodic
scheduler run inside the web workers) under light parallel use: `make run`'s own gunicorn
configuration, 16 clients mixing rule creates, pulls and subscribes. SQLite used to answer
"database is locked" (a 500) when two processes wrote at once."""
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor

from tests.concurrency import wait_until
from tests.web_server import gunicorn
from tests.worker import ROOT

CLIENTS = 16
REQUESTS_PER_CLIENT = 20
API = "/serviceorchestration/orchestration"


def _post(port: int, path: str, body: dict, system: str) -> tuple[int, str]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer SYSTEM//{system}"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _client(port: int, number: int, run: str) -> list[tuple[str, int, str]]:
    """One client's requests: a rule create, a pull and a subscribe (with an immediate push),
    in turn."""
    consumer, results = f"Consumer{number}", []
    requirement = {"serviceRequirement": {"serviceDefinition": "temperatureInfo"}}
    for step in range(REQUESTS_PER_CLIENT):
        kind = ("create", "pull", "subscribe")[step % 3]
        if kind == "create":
            entry = {"consumer": consumer, "priority": step + 1,
                     "serviceInstanceId": f"Provider{step}|temperatureInfo|1.0.0"}
            status, body = _post(port, f"{API}/mgmt/simple-store/create", {"entries": [entry]},
                                 "Sysop")
        elif kind == "pull":
            status, body = _post(port, f"{API}/pull", requirement, consumer)
        else:
            notify = {"protocol": "MQTT", "properties": {"topic": f"so-test/{run}/{number}"}}
            status, body = _post(port, f"{API}/subscribe?trigger=true",
                                 {"orchestrationRequest": requirement, "notifyInterface": notify},
                                 consumer)
        results.append((kind, status, body[:300]))
    return results


def test_the_sqlite_default_serves_parallel_clients_without_errors(tmp_path, mqtt_broker):
    database = tmp_path / "db.sqlite3"
    env = {"DATABASE_URL": f"sqlite:///{database}", "CELERY_BROKER_URL": None,
           "WEB_CONCURRENCY": None, "CONN_MAX_AGE": None,
           "MQTT_BROKER_URL": f"mqtt://{mqtt_broker[0]}:{mqtt_broker[1]}"}
    migrate = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, capture_output=True,
        text=True, timeout=300,
        env={**{name: value for name, value in os.environ.items() if name not in env},
             "DATABASE_URL": env["DATABASE_URL"]})
    assert migrate.returncode == 0, migrate.stderr[-3000:]

    log_path = tmp_path / "gunicorn.log"
    run = uuid.uuid4().hex[:8]
    with gunicorn(env, log_path) as port:
        with ThreadPoolExecutor(CLIENTS) as pool:
            results = [result for client in pool.map(lambda n: _client(port, n, run),
                                                     range(CLIENTS)) for result in client]
        # The history on SQLite (no count triggers, the serializer's rows): every pull, each
        # written just after its answer by the process that answered it (docs/history.md).
        pulls = sum(kind == "pull" for kind, _, _ in results)
        history = None

        def history_written() -> bool:
            nonlocal history
            history = _post(port, f"{API}/mgmt/history/query",
                            {"type": "PULL", "pagination": {"page": 0, "size": 5}}, "Sysop")
            return history[0] != 200 or json.loads(history[1])["count"] >= pulls

        wait_until(history_written, timeout=10, interval=0.1)
        # Who a notify topic belongs to is read with SQLite's JSON too: Consumer0's topic is
        # refused to another system (subscriptions/notify_topics.py).
        taken = _post(port, f"{API}/subscribe", {
            "orchestrationRequest": {"serviceRequirement": {"serviceDefinition": "other"}},
            "notifyInterface": {"protocol": "MQTT", "properties": {"topic": f"so-test/{run}/0"}}},
            "Intruder")

    log = log_path.read_text()
    failures = [result for result in results if result[1] >= 500]
    assert not failures, f"{len(failures)} of {len(results)} got a 5xx: {failures[:5]}"
    assert "database is locked" not in log, log[-5000:]
    assert "Traceback" not in log, log[-5000:]
    unexpected = [result for result in results if result[1] not in (200, 201)]
    assert not unexpected, unexpected[:5]
    assert history[0] == 200, history
    assert taken[0] == 400 and "is the notify topic of another system" in taken[1], taken
    page = json.loads(history[1])
    assert page["count"] == pulls and len(page["entries"]) == 5
    assert {entry["type"] for entry in page["entries"]} == {"PULL"}
    assert all(entry["createdAt"].endswith("Z") for entry in page["entries"])
    for entry in page["entries"]:  # the rows the job writer inserted read back whole
        assert str(uuid.UUID(entry["id"])) == entry["id"]
        assert entry["status"] == "DONE" and entry["subscriptionId"] is None
        assert entry["requesterSystem"] == entry["targetSystem"]
        assert entry["requesterSystem"].startswith("Consumer")
        assert entry["startedAt"] == entry["createdAt"] <= entry["finishedAt"]
