"""`make test`'s runner (tests/run_with_services.py): it uses the running servers it is told of
or finds at the default addresses, starts private ones where none answers, and leaves no
process and no folder behind however the run ends. Each run here is a real runner process
with real servers; the "default" addresses are made unreachable by replacing them with held
loopback ports."""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import psutil
import pytest
import yaml
from django.conf import settings

from tests import private_servers, run_with_services
from tests.concurrency import wait_for
from tests.ports import reserved_port
from tests.worker import ROOT, _database_url

VARIABLES = ("DATABASE_URL", "CELERY_BROKER_URL", "MQTT_BROKER_URL")

# The command the runner runs here: it uses the three servers it was given, prints their URLs,
# writes `ready` (at once, by a rename) and waits (argv: the ready file, the seconds to wait, its exit status).
COMMAND = """
import json, os, socket, sys, time
from pathlib import Path
from urllib.parse import urlsplit
import psycopg, redis
psycopg.connect(os.environ["DATABASE_URL"], dbname="postgres").close()
redis.Redis.from_url(os.environ["CELERY_BROKER_URL"]).ping()
mqtt = urlsplit(os.environ["MQTT_BROKER_URL"])
socket.create_connection((mqtt.hostname, mqtt.port)).close()
print(json.dumps({name: os.environ[name] for name in %r}), flush=True)
Path(sys.argv[1] + ".part").write_text(str(os.getpid()))
Path(sys.argv[1] + ".part").rename(sys.argv[1])  # whole when it appears
time.sleep(float(sys.argv[2]))
sys.exit(int(sys.argv[3]))
""" % (VARIABLES,)

# The runner, with the default addresses replaced (argv after the script: a JSON object
# {service name: default URL}, then the runner's own arguments).
RUNNER = """
import dataclasses, json, sys
from tests import run_with_services as runner
defaults = json.loads(sys.argv[1])
runner.SERVICES = tuple(dataclasses.replace(service, default=defaults.get(service.name,
                        service.default)) for service in runner.SERVICES)
sys.exit(runner.main(sys.argv[2:]))
"""


def unreachable_defaults() -> dict[str, str]:
    """Default addresses where nothing answers: held loopback ports nobody listens on."""
    return {"PostgreSQL": f"postgres://postgres@127.0.0.1:{reserved_port()}/serviceorchestration",
            "Redis": f"redis://127.0.0.1:{reserved_port()}/0",
            "Mosquitto": f"mqtt://127.0.0.1:{reserved_port()}"}


def start_runner(tmp_path: Path, defaults: dict[str, str], *, seconds: float = 0,
                 status: int = 0, named: dict[str, str] | None = None) -> subprocess.Popen:
    """The runner in a session of its own (as a terminal's foreground job), its output in
    tmp_path/out and tmp_path/err, the command's pid in tmp_path/ready once it runs."""
    env = {name: value for name, value in os.environ.items()
           if name not in VARIABLES and not name.startswith("TEST_")}
    with (tmp_path / "out").open("w") as out, (tmp_path / "err").open("w") as err:
        return subprocess.Popen(
            [sys.executable, "-c", RUNNER, json.dumps(defaults), "--", sys.executable, "-c",
             COMMAND, str(tmp_path / "ready"), str(seconds), str(status)],
            cwd=ROOT, env={**env, **(named or {})}, stdout=out, stderr=err,
            start_new_session=True)


def run_folder(runner_pid: int) -> list[Path]:
    return list(Path(tempfile.gettempdir()).glob(
        f"{private_servers.FOLDER_PREFIX}{runner_pid}-*"))


def processes_in(folder: Path) -> list[psutil.Process]:
    """The processes working in `folder` (the servers and PostgreSQL's backends)."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.cwd().startswith(str(folder)):
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def refuses(url: str) -> bool:
    parts = urlsplit(url)
    try:
        socket.create_connection((parts.hostname, parts.port), timeout=2).close()
    except OSError:
        return True
    return False


def running_servers(tmp_path: Path, runner: subprocess.Popen) -> tuple[Path, dict[str, str]]:
    """Wait until the runner's command runs; its run folder and the URLs it was given."""
    wait_for(lambda: (tmp_path / "ready").exists() or runner.poll() is not None,
             what="the runner's command")
    assert runner.poll() is None, (tmp_path / "err").read_text()
    [folder] = run_folder(runner.pid)
    return folder, json.loads((tmp_path / "out").read_text())


def assert_nothing_left(folder: Path, urls: dict[str, str]) -> None:
    wait_for(lambda: not processes_in(folder), what="the private servers to end")
    assert not folder.exists()
    assert all(refuses(url) for url in urls.values())


class NamedServersTests:
    def test_running_servers_are_used_as_named(self, tmp_path):
        named = {"TEST_DATABASE_URL": _database_url(),
                 "TEST_CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
                 "TEST_MQTT_BROKER_URL": settings.MQTT_BROKER_URL}
        runner = start_runner(tmp_path, unreachable_defaults(), named=named)

        assert runner.wait(timeout=60) == 0, (tmp_path / "err").read_text()
        assert json.loads((tmp_path / "out").read_text()) == {
            name: named[f"TEST_{name}"] for name in VARIABLES}
        assert "private" not in (tmp_path / "err").read_text()
        assert not run_folder(runner.pid)

    def test_a_named_server_that_does_not_answer_stops_the_run_at_once(self, tmp_path):
        port = reserved_port()
        named = {"TEST_CELERY_BROKER_URL": f"redis://:secret@127.0.0.1:{port}/0"}
        runner = start_runner(tmp_path, unreachable_defaults(), named=named)

        assert runner.wait(timeout=60) == 2
        [line] = (tmp_path / "err").read_text().splitlines()
        assert line.startswith(  # the password is not shown
            f"make test: TEST_CELERY_BROKER_URL=redis://:***@127.0.0.1:{port}/0 cannot be used (")
        assert "unset TEST_CELERY_BROKER_URL to have a private Redis started" in line
        assert not (tmp_path / "ready").exists() and not run_folder(runner.pid)


class PrivateServersTests:
    def test_private_servers_serve_the_run_and_are_gone_after_it(self, tmp_path):
        defaults = unreachable_defaults()
        runner = start_runner(tmp_path, defaults, seconds=0.5, status=3)
        folder, urls = running_servers(tmp_path, runner)
        servers = processes_in(folder)

        assert {process.username() for process in servers} >= {"postgres"}
        assert runner.wait(timeout=60) == 3  # the command's status, also when it fails
        assert set(urls) == set(VARIABLES)
        assert all(url not in defaults.values() for url in urls.values())
        assert urlsplit(urls["DATABASE_URL"]).path == "/serviceorchestration"
        assert (tmp_path / "err").read_text().count("make test: a private ") == 3
        assert_nothing_left(folder, urls)

    def test_ctrl_c_ends_the_command_first_and_then_the_servers(self, tmp_path):
        runner = start_runner(tmp_path, unreachable_defaults(), seconds=60)
        folder, urls = running_servers(tmp_path, runner)

        os.killpg(runner.pid, signal.SIGINT)  # as a terminal does: to the foreground group

        assert runner.wait(timeout=60) == 128 + signal.SIGINT
        assert_nothing_left(folder, urls)

    def test_sigterm_is_passed_on_to_the_command(self, tmp_path):
        runner = start_runner(tmp_path, unreachable_defaults(), seconds=60)
        folder, urls = running_servers(tmp_path, runner)
        command = psutil.Process(int((tmp_path / "ready").read_text()))

        runner.send_signal(signal.SIGTERM)  # the runner alone

        assert runner.wait(timeout=60) == 128 + signal.SIGTERM
        assert not command.is_running()
        assert_nothing_left(folder, urls)

    def test_a_run_killed_outright_takes_its_servers_and_the_next_run_its_folder(
            self, tmp_path):
        runner = start_runner(tmp_path, unreachable_defaults(), seconds=60)
        folder, urls = running_servers(tmp_path, runner)
        command = int((tmp_path / "ready").read_text())

        runner.kill()
        runner.wait(timeout=60)
        os.kill(command, signal.SIGKILL)  # orphaned; the servers are not: they die with it

        wait_for(lambda: not processes_in(folder), what="the servers to die with the runner")
        assert all(refuses(url) for url in urls.values())
        assert folder.exists()
        private_servers.sweep_stale_folders()
        assert not folder.exists()


class MissingProgramsTests:
    def test_missing_packages_are_named_in_one_line_where_they_cannot_be_installed(
            self, monkeypatch):
        monkeypatch.setitem(private_servers.SERVER_BINARIES, "Redis", ("so-no-redis-server",))
        monkeypatch.setitem(private_servers.PACKAGES, "so-no-redis-server", "redis-server")
        monkeypatch.setattr(run_with_services, "can_install", lambda: False)
        redis_service = run_with_services.SERVICES[1]

        with pytest.raises(run_with_services.Stop) as stopped:
            run_with_services.ensure_programs([redis_service])

        assert str(stopped.value) == (
            "missing packages redis-server: install them (as root: apt-get install -y "
            "redis-server) and run make test again (or start the servers of "
            "compose.test.yaml: docker compose -f compose.test.yaml up -d)")

    def test_packages_are_named_once_and_only_for_missing_programs(self, monkeypatch):
        monkeypatch.setitem(private_servers.PACKAGES, "so-no-initdb", "so-no-postgresql")
        monkeypatch.setitem(private_servers.PACKAGES, "so-no-postgres", "so-no-postgresql")

        assert private_servers.missing_packages(["mosquitto", "mosquitto_sub"]) == []
        assert private_servers.missing_packages(
            ["so-no-initdb", "mosquitto", "so-no-postgres"]) == ["so-no-postgresql"]

    def test_postgresql_is_found_where_debian_puts_it(self):
        for name in ("initdb", "postgres"):
            assert os.access(private_servers.find_binary(name), os.X_OK)


def test_compose_test_file_serves_the_default_addresses_on_loopback_only():
    services = yaml.safe_load((ROOT / "compose.test.yaml").read_text())["services"]
    published = sorted(port for service in services.values() for port in service["ports"])
    defaults = [urlsplit(service.default).port for service in run_with_services.SERVICES]
    assert published == sorted(f"127.0.0.1:{port}:{port}" for port in defaults)
