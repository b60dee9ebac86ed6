"""What `make test` runs: `python -m tests.run_with_services -- <command>` runs the command
(pytest) with PostgreSQL, Redis and Mosquitto reachable, as DATABASE_URL, CELERY_BROKER_URL and
MQTT_BROKER_URL in its environment.

For each service:
- TEST_DATABASE_URL, TEST_CELERY_BROKER_URL or TEST_MQTT_BROKER_URL, when set, names a running
  server to use; one that cannot be used ends the run at once, naming it.
- Unset, the default address (the local server's usual port) is used when a server there
  answers, else a private server is started for the run (`tests/private_servers.py`).
Missing programs (the private servers', Mosquitto's broker and `mosquitto_sub`, which the
tests start themselves, nginx, which the web process runs in front of gunicorn, promtool,
which checks the alert rules, and `systemd-analyze`, which checks the systemd units) are
installed from the distribution's packages when running as root on Debian or Ubuntu; otherwise
the run stops at once with one line naming the packages.

The private servers are stopped, and their folder removed, when the command ends, also when it
fails or is interrupted: Ctrl-C reaches the command (pytest ends its run and tears down), and
SIGTERM and SIGHUP are passed on to it; the servers stop after it.
"""
import os
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import redis

from tests.private_servers import (ALWAYS_NEEDED, SERVER_BINARIES, PrivateServers, ServerError,
                                   can_install, install, missing_packages)

PROBE_TIMEOUT_SECONDS = 3


def _postgres_error(url: str) -> str | None:
    if urlsplit(url).scheme not in ("postgres", "postgresql"):
        return "not a postgres:// URL"
    try:
        psycopg.connect(url, dbname="postgres", connect_timeout=PROBE_TIMEOUT_SECONDS).close()
    except psycopg.Error as error:
        return str(error).strip().splitlines()[-1]
    return None


def _redis_error(url: str) -> str | None:
    if urlsplit(url).scheme != "redis":
        return "not a redis:// URL"
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=PROBE_TIMEOUT_SECONDS,
                                      socket_timeout=PROBE_TIMEOUT_SECONDS)
        client.ping()
        client.close()
    except redis.RedisError as error:
        return str(error)
    return None


def _mqtt_error(url: str) -> str | None:
    parts = urlsplit(url)
    if parts.scheme != "mqtt":
        return "not a plain mqtt:// URL"
    try:
        socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 1883),
                                 timeout=PROBE_TIMEOUT_SECONDS).close()
    except OSError as error:
        return str(error)
    return None


@dataclass(frozen=True)
class Service:
    name: str
    test_variable: str  # where the user names a running server
    app_variable: str  # what the service reads
    default: str
    error: Callable[[str], str | None]  # why the server at a URL cannot be used, or None


SERVICES = (
    Service("PostgreSQL", "TEST_DATABASE_URL", "DATABASE_URL",
            "postgres://postgres@127.0.0.1:5432/serviceorchestration", _postgres_error),
    Service("Redis", "TEST_CELERY_BROKER_URL", "CELERY_BROKER_URL",
            "redis://127.0.0.1:6379/0", _redis_error),
    Service("Mosquitto", "TEST_MQTT_BROKER_URL", "MQTT_BROKER_URL",
            "mqtt://127.0.0.1:1883", _mqtt_error),
)


def _shown(url: str) -> str:
    """`url` without its password, for the run's output."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return url.replace(f":{parts.password}@", ":***@", 1)


class Stop(Exception):
    """The run cannot go on; the message is the one line that says why."""


def choose(services: tuple[Service, ...]) -> tuple[dict[str, str], list[Service]]:
    """The URLs of the servers to use ({app variable: URL}) and the services that need a
    private server."""
    urls, private = {}, []
    for service in services:
        named = os.environ.get(service.test_variable, "")
        error = service.error(named or service.default)
        if error is None:
            urls[service.app_variable] = named or service.default
            print(f"make test: {service.name} at {_shown(named or service.default)}",
                  file=sys.stderr)
        elif named:
            raise Stop(f"{service.test_variable}={_shown(named)} cannot be used ({error}); "
                       f"start that server, or unset {service.test_variable} to have a "
                       f"private {service.name} started for the run")
        else:
            private.append(service)
    return urls, private


def ensure_programs(private: list[Service]) -> None:
    """Install what the run needs and misses, or stop naming the packages."""
    binaries = [*ALWAYS_NEEDED]
    for service in private:
        binaries += SERVER_BINARIES[service.name]
    packages = missing_packages(binaries)
    if not packages:
        return
    if not can_install():
        servers = [p for p in packages
                   if p not in ("mosquitto", "mosquitto-clients", "nginx-light",
                                "prometheus", "systemd")]
        instead = (" (or start the servers of compose.test.yaml: docker compose -f "
                   "compose.test.yaml up -d)" if servers else "")
        raise Stop(f"missing packages {' '.join(packages)}: install them (as root: apt-get "
                   f"install -y {' '.join(packages)}) and run make test again{instead}")
    print(f"make test: installing {' '.join(packages)} (apt-get)", file=sys.stderr)
    with tempfile.NamedTemporaryFile(prefix="so-test-apt-", suffix=".log") as log:
        install(packages, Path(log.name))


def start_private(servers: PrivateServers, private: list[Service]) -> dict[str, str]:
    urls = {}
    for service in private:
        if service.name == "PostgreSQL":
            database = urlsplit(service.default).path.lstrip("/")
            urls[service.app_variable] = servers.start_postgres(database).url
        elif service.name == "Redis":
            urls[service.app_variable] = servers.start_redis().url
        else:
            urls[service.app_variable] = servers.start_mosquitto().url
    return urls


def run(command: list[str], env: dict[str, str]) -> int:
    """Run `command` to its end and return its exit status (128 + N for signal N). Ctrl-C is
    the command's to handle (it is in the same process group); SIGTERM and SIGHUP are passed
    on to it."""
    child = subprocess.Popen(command, env=env)
    handlers = {signal.SIGINT: signal.SIG_IGN,
                signal.SIGTERM: lambda number, frame: child.send_signal(number),
                signal.SIGHUP: lambda number, frame: child.send_signal(number)}
    previous = {number: signal.signal(number, handler) for number, handler in handlers.items()}
    try:
        status = child.wait()
    finally:
        if child.poll() is None:  # interrupted before the handlers were in place
            child.terminate()
            child.wait()
        for number, handler in previous.items():
            signal.signal(number, handler)
    return status if status >= 0 else 128 - status


def main(argv: list[str]) -> int:
    if "--" not in argv or not argv[argv.index("--") + 1:]:
        print("usage: python -m tests.run_with_services -- COMMAND [ARG...]", file=sys.stderr)
        return 2
    command = argv[argv.index("--") + 1:]
    servers = None
    try:
        urls, private = choose(SERVICES)
        ensure_programs(private)
        if private:
            servers = PrivateServers()
            urls.update(start_private(servers, private))
        return run(command, {**os.environ, **urls})
    except (Stop, ServerError) as error:
        print(f"make test: {error}", file=sys.stderr)
        return 2
    finally:
        if servers is not None:
            servers.stop_all()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
