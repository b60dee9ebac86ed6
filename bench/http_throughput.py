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
import socket
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (  # noqa: E402
    ECHO,
    PULL,
    RULES,
    create_database,
    require_wrk,
    run_wrk,
    running_server,
    server_environment,
    wrk_summary,
)

DATABASE_URL = os.environ.get(
    "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/serviceorchestration_http_bench")
CONSUMER = "BenchConsumer"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--slow", type=int, default=0, help="connections dripping headers")
    arguments = parser.parse_args()
    require_wrk()
    environment = server_environment(DATABASE_URL)
    create_database(DATABASE_URL)
    port = int(environment["PORT"])
    with tempfile.TemporaryDirectory() as scratch, \
            running_server(environment, Path(scratch) / "gunicorn.log"):
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
        for name, script in (("echo", None), ("pull", pull_script)):
            output = run_wrk(port, ECHO if name == "echo" else PULL, script=script,
                             seconds=arguments.seconds, connections=arguments.connections)
            print(f"{name}: {wrk_summary(output)}")
        stop.set()


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


if __name__ == "__main__":
    main()
