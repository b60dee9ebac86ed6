"""What the HTTP benchmarks share: a database of their own, the server started as `make run`
starts it (gunicorn with config/gunicorn.py, on a free loopback port), JSON calls to it, and
wrk runs with their output parsed."""
import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ECHO = "/serviceorchestration/monitor/echo"
PULL = "/serviceorchestration/orchestration/pull"
RULES = "/serviceorchestration/orchestration/mgmt/simple-store/create"
FLEXIBLE_RULES = "/serviceorchestration/orchestration/mgmt/flexible-store/create"
INSTANCES = "/serviceorchestration/orchestration/mgmt/service-instances/create"
SYSOP = {"Authorization": "Bearer SYSTEM//Sysop"}
WRK_INSTALL_HINT = ("wrk is not on PATH: install it (Debian/Ubuntu: apt-get install wrk; "
                    "macOS: brew install wrk; or build https://github.com/wg/wrk)")
_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0, "h": 3_600_000.0}


def require_wrk() -> None:
    if not shutil.which("wrk"):
        sys.exit(WRK_INSTALL_HINT)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def create_database(database_url: str, fresh: bool = False) -> None:
    """Create the PostgreSQL database of `database_url` when missing (`fresh`: drop it first)."""
    import psycopg

    base, name = database_url.rsplit("/", 1)
    with psycopg.connect(base + "/postgres", autocommit=True) as admin:
        if fresh:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if not admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            admin.execute(f'CREATE DATABASE "{name}"')


def server_environment(database_url: str, **extra: str) -> dict[str, str]:
    # The benches' notify endpoints listen on loopback, which the service refuses by default.
    return {**os.environ, "DATABASE_URL": database_url, "SERVE_STATIC": "false",
            "HOST": "127.0.0.1", "PORT": str(free_port()), "LOG_LEVEL": "WARNING",
            "NOTIFY_HTTP_ALLOWED_NETWORKS": "127.0.0.0/8", **extra}


@contextlib.contextmanager
def running_server(environment: dict[str, str], log_path: Path):
    """Migrate, then serve as `make run` does (nginx in front of gunicorn, config/front.py)
    until the block ends; yields the gunicorn master process (nginx's port is
    environment["PORT"])."""
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
                   cwd=ROOT, env=environment, check=True)
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--config", "python:config.gunicorn",
             "--access-logfile", "/dev/null", "config.wsgi"],
            cwd=ROOT, env=environment, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for_echo(int(environment["PORT"]))
            yield server
        finally:
            server.terminate()
            server.wait(timeout=30)


def wait_for_echo(port: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}{ECHO}", timeout=2).read()
            return
        except OSError:
            time.sleep(0.2)
    sys.exit("the server did not answer echo within 60 s")


def post_json(port: int, path: str, body: dict, headers: dict[str, str],
              timeout: float = 300) -> dict:
    """POST `body`; the decoded answer, or SystemExit naming the status and answer."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as error:
        raise SystemExit(f"POST {path}: {error.code} {error.read()[:500]!r}") from None


def run_wrk(port: int, path: str, *, seconds: int, connections: int, threads: int = 2,
            script: Path | None = None) -> str:
    """wrk's whole output (with --latency) for one run against `path`."""
    extra = ["-s", str(script)] if script else []
    result = subprocess.run(
        ["wrk", "-t", str(min(threads, connections)), "-c", str(connections),
         "-d", f"{seconds}s", "--timeout", "10s", "--latency", *extra,
         f"http://127.0.0.1:{port}{path}"],
        capture_output=True, text=True, check=True)
    return result.stdout


def wrk_summary(output: str) -> str:
    """The lines of wrk's output that the benchmarks print, joined by "; "."""
    wanted = ("Requests/sec", "Non-2xx", "Socket errors", "50%", "99%")
    return "; ".join(line.strip() for line in output.splitlines()
                     if line.strip().startswith(wanted))


def parse_wrk(output: str) -> dict:
    """req/s, p50 and p99 (ms), requests, non-2xx answers and socket errors of a wrk run."""
    figures = {"requests_per_second": None, "p50_ms": None, "p99_ms": None, "requests": None,
               "non_2xx": 0, "socket_errors": 0}
    for line in output.splitlines():
        line = line.strip()
        if match := re.match(r"Requests/sec:\s+([\d.]+)", line):
            figures["requests_per_second"] = float(match[1])
        elif match := re.match(r"(50|99)(?:\.0+)?%\s+([\d.]+)(us|ms|s|m|h)$", line):
            figures[f"p{match[1]}_ms"] = float(match[2]) * _UNITS[match[3]]
        elif match := re.match(r"(\d+) requests in", line):
            figures["requests"] = int(match[1])
        elif match := re.match(r"Non-2xx or 3xx responses:\s+(\d+)", line):
            figures["non_2xx"] = int(match[1])
        elif line.startswith("Socket errors:"):
            figures["socket_errors"] = sum(int(n) for n in re.findall(r"\d+", line))
    return figures
