"""HTTP notification fairness (issue 28, item 2): how stale subscribers whose HTTP endpoints
answer get while other subscribers' endpoints drip their answer or never answer.

    .venv/bin/python bench/http_fairness.py           # 50 answering, 8 dripping, 20 silent
    .venv/bin/python bench/http_fairness.py --answering 10 --changes 10      # quick

The production topology of `bench/push_fanout.py` (gunicorn, `make worker`'s two workers and
beat, Redis as broker; BENCH_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/serviceorchestration_fairness_bench, created fresh;
BENCH_REDIS_URL, default redis://127.0.0.1:6379/6, flushed). One instance
`FairProvider|fairService|1.0.0` and one rule to it per consumer; each consumer subscribes
without trigger, with an HTTP notify interface on a loopback endpoint of its own.

Two phases of `--changes` instance updates, one a second (metadata `benchRevision` 1, 2, ...):
first with the answering subscribers alone (the baseline), then with `--dripping` endpoints
that answer `200 OK` and send a header byte every 2 s, and `--silent` ones that accept and never
answer, subscribed too. Staleness of an answering subscriber for update k: from the update
call until it has received revision k or a later one (an update it never gets counts until the
phase's end and is reported as missing). Prints median, 90th percentile and max per phase and
the ratio of the two (the goal: within about 2x).
"""
import argparse
import http.client
import json
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import INSTANCES, RULES, SYSOP, create_database, post_json, running_server  # noqa: E402
from harness import server_environment  # noqa: E402
from push_fanout import (  # noqa: E402
    SUBSCRIBE,
    call_json,
    celery_processes,
    instance_interface,
    topology_environment,
)

DATABASE_URL = os.environ.get(
    "BENCH_DATABASE_URL",
    "postgres://postgres@127.0.0.1:5432/serviceorchestration_fairness_bench")
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/6")
INSTANCE_ID = "FairProvider|fairService|1.0.0"
UPDATE = "/serviceorchestration/orchestration/mgmt/service-instances/update"


class Answering:
    """An endpoint that answers 204 at once and records (revision, arrival) of each push."""

    def __init__(self) -> None:
        self.arrivals: list[tuple[int, float]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                results = body.get("payload", body).get("results") or [{}]
                revision = int((results[0].get("metadata") or {}).get("benchRevision", 0))
                endpoint.arrivals.append((revision, time.monotonic()))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def notify(self) -> dict:
        return {"protocol": "HTTP", "properties": {
            "address": "127.0.0.1", "port": self.server.server_address[1], "method": "POST",
            "path": "/notify"}}

    def received_by(self, revision: int) -> float | None:
        """When a revision >= `revision` first arrived."""
        times = [at for got, at in self.arrivals if got >= revision]
        return min(times) if times else None

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Bad:
    """An endpoint that accepts and then drips its answer's head (`drip` seconds a byte) or,
    without `drip`, never answers."""

    def __init__(self, drip: float | None) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=256)
        self.drip, self.stopped = drip, threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def notify(self) -> dict:
        return {"protocol": "HTTP", "properties": {
            "address": "127.0.0.1", "port": self.listener.getsockname()[1],
            "method": "POST", "path": "/notify"}}

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._hold, args=(connection,), daemon=True).start()

    def _hold(self, connection: socket.socket) -> None:
        try:
            connection.recv(65536)
            if self.drip is not None:
                connection.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                while not self.stopped.wait(self.drip):
                    connection.sendall(b"a")
            else:
                self.stopped.wait()
        except OSError:
            pass
        finally:
            connection.close()

    def close(self) -> None:
        self.stopped.set()
        self.listener.close()


def subscribe(port: int, consumer: str, notify: dict) -> None:
    """Without trigger; the answer is the subscription's id as text."""
    body = {"orchestrationRequest": {"serviceRequirement": {"serviceDefinition": "fairService"}},
            "notifyInterface": notify}
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("POST", SUBSCRIBE, json.dumps(body), {
            "Content-Type": "application/json", "Authorization": f"Bearer SYSTEM//{consumer}"})
        answer = connection.getresponse()
        text = answer.read()
    finally:
        connection.close()
    if answer.status != 201:
        raise SystemExit(f"subscribe {consumer}: {answer.status} {text[:300]!r}")


def create_instance(port: int) -> None:
    post_json(port, INSTANCES, {"instances": [{
        "systemName": "FairProvider", "serviceDefinitionName": "fairService",
        "version": "1.0.0", "metadata": {"benchRevision": 0},
        "interfaces": [instance_interface()]}]}, SYSOP)


def update(port: int, revision: int) -> None:
    call_json(port, "PUT", UPDATE, {"instances": [{
        "instanceId": INSTANCE_ID, "metadata": {"benchRevision": revision},
        "interfaces": [instance_interface()]}]}, SYSOP)


def phase(port: int, answering: list[Answering], first: int, changes: int,
          grace: float) -> list[float | None]:
    """`changes` updates a second from revision `first`; each answering subscriber's
    staleness per update (None: never received)."""
    called = []
    for revision in range(first, first + changes):
        called.append((revision, time.monotonic()))
        update(port, revision)
        time.sleep(max(0.0, called[-1][1] + 1.0 - time.monotonic()))
    time.sleep(grace)
    staleness = []
    for endpoint in answering:
        for revision, at in called:
            received = endpoint.received_by(revision)
            staleness.append(None if received is None else max(0.0, received - at))
    return staleness


def figures(name: str, staleness: list[float | None], end: float) -> tuple[float, str]:
    values = sorted(end if value is None else value for value in staleness)
    missing = sum(value is None for value in staleness)
    median = statistics.median(values)
    p90 = values[int(0.9 * (len(values) - 1))]
    return median, (f"{name}: staleness median {median:.2f} s, p90 {p90:.2f} s, max "
                    f"{values[-1]:.2f} s over {len(values)} (subscriber, update) pairs, "
                    f"{missing} never received")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answering", type=int, default=50)
    parser.add_argument("--dripping", type=int, default=8)
    parser.add_argument("--silent", type=int, default=20)
    parser.add_argument("--changes", type=int, default=30)
    parser.add_argument("--grace", type=float, default=20.0,
                        help="seconds to wait for arrivals after the last update")
    arguments = parser.parse_args()

    import redis

    create_database(DATABASE_URL, fresh=True)
    redis.Redis.from_url(REDIS_URL).flushdb()
    logs = Path(tempfile.mkdtemp(prefix="so-bench-fairness-"))
    environment = topology_environment("production", DATABASE_URL, REDIS_URL,
                                       server_environment(DATABASE_URL))
    port = int(environment["PORT"])
    answering = [Answering() for _ in range(arguments.answering)]
    bad = ([Bad(drip=2.0) for _ in range(arguments.dripping)]
           + [Bad(drip=None) for _ in range(arguments.silent)])
    try:
        with running_server(environment, logs / "server.log"), \
                celery_processes(environment, logs):
            create_instance(port)
            names = [f"Answering{n}" for n in range(len(answering))] + [
                f"Bad{n}" for n in range(len(bad))]
            post_json(port, RULES, {"entries": [
                {"consumer": name, "serviceInstanceId": INSTANCE_ID,
                 "priority": 1} for name in names]}, SYSOP)
            time.sleep(3)  # the rules' changes processed before anyone subscribes
            for number, endpoint in enumerate(answering):
                subscribe(port, f"Answering{number}", endpoint.notify())
            baseline = phase(port, answering, 1, arguments.changes, arguments.grace)
            for number, endpoint in enumerate(bad):
                subscribe(port, f"Bad{number}", endpoint.notify())
            loaded = phase(port, answering, 1 + arguments.changes, arguments.changes,
                           arguments.grace)
    finally:
        for endpoint in [*answering, *bad]:
            endpoint.close()
    end = arguments.changes + arguments.grace
    base_median, base_line = figures("answering alone", baseline, end)
    loaded_median, loaded_line = figures(
        f"with {arguments.dripping} dripping and {arguments.silent} silent", loaded, end)
    print(base_line)
    print(loaded_line)
    print(f"median ratio {loaded_median / max(base_median, 1e-3):.2f} (goal: about 2 or less); "
          f"logs in {logs}")


if __name__ == "__main__":
    main()
