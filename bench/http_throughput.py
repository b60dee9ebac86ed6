"""HTTP throughput of the real server (`make run`'s gunicorn configuration) on loopback, for
choosing the worker model (docs/performance.md): wrk against echo and against a pull that
finds five rules.

    .venv/bin/python bench/http_throughput.py [--seconds 10] [--connections 16] [--slow 0]

Server settings come from the environment as for `make run` (WEB_CONCURRENCY, WEB_THREADS,
...), so one can compare models: `WEB_THREADS=1 .venv/bin/python bench/http_throughput.py`.
`--slow N` keeps N extra connections dripping request headers during the runs. Needs `wrk` on
PATH and PostgreSQL; uses its own database (BENCH_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/serviceorchestration_http_bench), created when missing.
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATABASE_URL = os.environ.get(
    "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/serviceorchestration_http_bench")
ECHO = "/serviceorchestration/monitor/echo"
PULL = "/serviceorchestration/orchestration/pull"
RULES = "/serviceorchestration/orchestration/mgmt/simple-store/create"
CONSUMER = "BenchConsumer"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--slow", type=int, default=0, help="connections dripping headers")
    arguments = parser.parse_args()
    if not shutil.which("wrk"):
        sys.exit("wrk is not on PATH (e.g. apt-get install wrk)")
    environment = {**os.environ, "DATABASE_URL": DATABASE_URL, "SERVE_STATIC": "false",
                   "HOST": "127.0.0.1", "PORT": str(_free_port()), "LOG_LEVEL": "WARNING"}
    _create_database()
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
                   cwd=ROOT, env=environment, check=True)
    port = int(environment["PORT"])
    with tempfile.TemporaryDirectory() as scratch, \
            open(Path(scratch) / "gunicorn.log", "w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--config", "python:config.gunicorn",
             "--access-logfile", "/dev/null", "config.wsgi"],
            cwd=ROOT, env=environment, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_for_echo(port)
            _store_rules(port)
            pull_script = Path(scratch) / "pull.lua"
            pull_script.write_text(_wrk_post_script())
            stop = threading.Event()
            drippers = [threading.Thread(target=_drip_headers, args=(port, stop), daemon=True)
                        for _ in range(arguments.slow)]
            for dripper in drippers:
                dripper.start()
            print(f"WEB_CONCURRENCY={os.environ.get('WEB_CONCURRENCY', '2')} "
                  f"WEB_THREADS={os.environ.get('WEB_THREADS', 'default')} "
                  f"connections={arguments.connections} slow={arguments.slow}")
            for name, extra in (("echo", []), ("pull", ["-s", str(pull_script)])):
                path = ECHO if name == "echo" else PULL
                print(f"{name}: {_wrk(port, path, extra, arguments)}")
            stop.set()
        finally:
            server.terminate()
            server.wait(timeout=30)


def _wrk(port: int, path: str, extra: list[str], arguments: argparse.Namespace) -> str:
    result = subprocess.run(
        ["wrk", "-t", "2", "-c", str(arguments.connections), "-d", f"{arguments.seconds}s",
         "--timeout", "10s", "--latency", *extra, f"http://127.0.0.1:{port}{path}"],
        capture_output=True, text=True, check=True)
    lines = result.stdout.splitlines()
    wanted = ("Requests/sec", "Non-2xx", "Socket errors", "50%", "99%")
    return "; ".join(line.strip() for line in lines if line.strip().startswith(wanted))


def _wrk_post_script() -> str:
    body = json.dumps({"serviceRequirement": {"serviceDefinition": "benchService"}})
    return (f'wrk.method = "POST"\nwrk.body = {json.dumps(body)}\n'
            f'wrk.headers["Content-Type"] = "application/json"\n'
            f'wrk.headers["Authorization"] = "Bearer SYSTEM//{CONSUMER}"\n')


def _store_rules(port: int) -> None:
    """Five rules for CONSUMER (stored again on each run: the store keeps one per key)."""
    candidates = [{"consumer": CONSUMER, "priority": priority,
                   "serviceInstanceId": f"Provider{priority}|benchService|1.0.0"}
                  for priority in range(1, 6)]
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{RULES}", data=json.dumps({"candidates": candidates}).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer SYSTEM//Sysop"})
    try:
        urllib.request.urlopen(request, timeout=30).read()
    except urllib.error.HTTPError as error:  # already stored by an earlier run
        if error.code >= 500:
            raise


def _drip_headers(port: int, stop: threading.Event) -> None:
    with socket.create_connection(("127.0.0.1", port)) as connection:
        connection.sendall(f"GET {ECHO} HTTP/1.1\r\nHost: x\r\n".encode())
        while not stop.wait(0.5):
            try:
                connection.sendall(b"a")
            except OSError:
                return


def _wait_for_echo(port: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}{ECHO}", timeout=2).read()
            return
        except OSError:
            time.sleep(0.2)
    sys.exit("the server did not answer echo within 60 s")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _create_database() -> None:
    import psycopg

    name = DATABASE_URL.rsplit("/", 1)[1]
    with psycopg.connect(DATABASE_URL.rsplit("/", 1)[0] + "/postgres",
                         autocommit=True) as admin:
        if not admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            admin.execute(f'CREATE DATABASE "{name}"')


if __name__ == "__main__":
    main()
