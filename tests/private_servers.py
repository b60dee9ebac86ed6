"""Private PostgreSQL, Redis and Mosquitto servers for one test run, started from the installed
server binaries by `tests/run_with_services.py` (what `make test` runs) where no running server
can be used.

Each server runs on a loopback port held for it (`tests.ports` says how: nobody else gets it,
and the server, which sets SO_REUSEADDR, binds it nevertheless), keeps its files in one folder
of the run (`so-test-services-<pid>-*` in the temporary directory), and is started and stopped
by mirakuru: in a session of its own (a Ctrl-C in the terminal reaches the tests, which end
their run, not the servers they still use), waited for until it answers, stopped with its whole
process group. Each is also started under `setpriv --pdeathsig`, so a run killed outright
(SIGKILL) takes its servers with it; the next run removes the folders of runs that no longer
exist. As root, each runs as its package's user (PostgreSQL refuses root).
"""
import glob
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import psutil
import psycopg
from mirakuru import TCPExecutor

from tests.ports import port_holder

FOLDER_PREFIX = "so-test-services-"
START_TIMEOUT_SECONDS = 60

# The Debian/Ubuntu package of each binary the run may need.
PACKAGES = {"initdb": "postgresql", "postgres": "postgresql", "redis-server": "redis-server",
            "mosquitto": "mosquitto", "mosquitto_sub": "mosquitto-clients",
            "nginx": "nginx-light", "promtool": "prometheus", "systemd-analyze": "systemd"}
# Always needed: tests start brokers of their own and the README's listener, the web
# process's front (nginx, config/front.py), promtool, which checks the alert rules and the
# Prometheus configuration of deploy/monitoring/ (the package's server is not used), and
# systemd's checker of the units in deploy/systemd/ (tests/test_deployment_units.py).
ALWAYS_NEEDED = ("mosquitto", "mosquitto_sub", "nginx", "promtool", "systemd-analyze")
SERVER_BINARIES = {"PostgreSQL": ("initdb", "postgres"), "Redis": ("redis-server",),
                   "Mosquitto": ("mosquitto",)}


class ServerError(Exception):
    """A private server could not be started; the message says why, in one line or with the
    server's log."""


def find_binary(name: str) -> str | None:
    """The path of an installed program: on PATH, in the sbin folders (Mosquitto's, off a
    non-root PATH), or PostgreSQL's versioned folder (the newest), where Debian puts it."""
    path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/local/sbin", "/usr/sbin",
                            "/sbin"])
    found = shutil.which(name, path=path)
    if found:
        return found
    versions = glob.glob(f"/usr/lib/postgresql/*/bin/{name}")
    versions.sort(key=lambda p: [int(n) for n in re.findall(r"\d+", p.split("/")[4])])
    return versions[-1] if versions else None


def missing_packages(binaries: list[str]) -> list[str]:
    """The packages to install for those of `binaries` that are not installed, in order."""
    packages = [PACKAGES[name] for name in binaries if find_binary(name) is None]
    return list(dict.fromkeys(packages))


def can_install() -> bool:
    """Whether this run may install packages itself: as root on Debian or Ubuntu."""
    return (os.geteuid() == 0 and Path("/etc/debian_version").exists()
            and shutil.which("apt-get") is not None)


def install(packages: list[str], log: Path) -> None:
    """Install `packages` from the distribution, without questions; the output goes to `log`,
    its end into the error when it fails."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    with log.open("w") as out:
        for command in (["apt-get", "update", "-q"],
                        ["apt-get", "install", "-y", "-q", "--no-install-recommends",
                         *packages]):
            if subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, env=env,
                              stdin=subprocess.DEVNULL).returncode:
                raise ServerError(f"{' '.join(command)} failed:\n{log.read_text()[-3000:]}")


def sweep_stale_folders() -> None:
    """Remove the folders of earlier runs whose process is gone (killed before it could), and
    end any server still working in one (where `setpriv` was missing)."""
    stale = [folder for folder in Path(tempfile.gettempdir()).glob(f"{FOLDER_PREFIX}*-*")
             if (pid := _run_pid(folder)) is not None and not _alive(pid)]
    if not stale:
        return
    for process in psutil.process_iter():
        try:
            if any(process.cwd().startswith(str(folder)) for folder in stale):
                process.kill()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    for folder in stale:
        shutil.rmtree(folder, ignore_errors=True)


def _run_pid(folder: Path) -> int | None:
    """The pid of the run that made `folder` (its name holds it), or None."""
    pid = folder.name[len(FOLDER_PREFIX):].split("-", 1)[0]
    return int(pid) if pid.isdigit() else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _account(name: str) -> pwd.struct_passwd | None:
    """As root, the package's own user to run its server as; otherwise None (this user)."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None


class _PostgresExecutor(TCPExecutor):
    """Started when the server accepts a session, not only a TCP connection (it accepts while
    it still answers 'the database system is starting up')."""

    def after_start_check(self) -> bool:
        try:
            psycopg.connect(host=self.host, port=self.port, user="postgres", dbname="postgres",
                            connect_timeout=2).close()
        except psycopg.Error:
            return False
        return True


@dataclass
class PrivateServer:
    """One running private server: its URL and what stops it (`executor.stopped()` stops it
    for a while, e.g. to test an outage)."""
    name: str
    url: str
    executor: TCPExecutor
    holder: socket.socket
    log: IO[str]

    def stop(self) -> None:
        try:
            self.executor.stop()
        except Exception:  # noqa: BLE001 - whatever it says, it must not stay
            self.executor.kill()
        finally:
            self.holder.close()
            self.log.close()


class PrivateServers:
    """The folder of this run's private servers and the servers started in it; `stop_all`
    stops them and removes the folder."""

    def __init__(self) -> None:
        sweep_stale_folders()
        self.folder = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-"))
        self.folder.chmod(0o755)  # servers run as their package's user below it
        self.servers: list[PrivateServer] = []

    def start_postgres(self, database: str) -> PrivateServer:
        """A cluster initialised for this run (user `postgres`, trust on loopback, no fsync:
        nothing of it outlives the run), serving `database`'s URL."""
        account = _account("postgres")
        if os.geteuid() == 0 and account is None:
            raise ServerError("PostgreSQL does not run as root and there is no 'postgres' "
                              "user to run it as (install the postgresql package)")
        folder = self._subfolder("postgresql", account)
        data = folder / "data"
        initdb = subprocess.run(
            [find_binary("initdb"), "--pgdata", str(data), "--username", "postgres",
             "--auth", "trust", "--encoding", "UTF8", "--locale", "C.UTF-8", "--no-sync"],
            capture_output=True, text=True, cwd=folder, **_as_user(account))
        if initdb.returncode:
            raise ServerError(f"initdb failed:\n{initdb.stdout}{initdb.stderr}")
        holder = port_holder()
        port = holder.getsockname()[1]
        command = [find_binary("postgres"), "-D", str(data), "-p", str(port), "-F",
                   "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={folder}",
                   "-c", "logging_collector=off"]
        # SIGINT is PostgreSQL's fast shutdown: it does not wait for the tests' connections.
        return self._start("PostgreSQL", f"postgres://postgres@127.0.0.1:{port}/{database}",
                           _PostgresExecutor, command, holder, folder, account, signal.SIGINT)

    def start_redis(self) -> PrivateServer:
        """A Redis that keeps nothing on disk."""
        account = _account("redis")
        folder = self._subfolder("redis", account)
        holder = port_holder()
        port = holder.getsockname()[1]
        command = [find_binary("redis-server"), "--port", str(port), "--bind", "127.0.0.1",
                   "--save", "", "--appendonly", "no", "--dir", str(folder),
                   "--daemonize", "no", "--logfile", ""]
        return self._start("Redis", f"redis://127.0.0.1:{port}/0", TCPExecutor, command,
                           holder, folder, account, signal.SIGTERM)

    def start_mosquitto(self) -> PrivateServer:
        """A Mosquitto with one plain listener on loopback for anonymous clients, as the
        distribution's default broker answers local clients, and no persistence."""
        account = _account("mosquitto")
        folder = self._subfolder("mosquitto", account)
        holder = port_holder()
        port = holder.getsockname()[1]
        config = folder / "mosquitto.conf"
        config.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\n"
                          "persistence false\nlog_dest stdout\n")
        command = [find_binary("mosquitto"), "-c", str(config)]
        return self._start("Mosquitto", f"mqtt://127.0.0.1:{port}", TCPExecutor, command,
                           holder, folder, account, signal.SIGTERM)

    def stop_all(self) -> None:
        """Stop every server (the last started first) and remove the folder."""
        while self.servers:
            self.servers.pop().stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def _subfolder(self, name: str, account: pwd.struct_passwd | None) -> Path:
        folder = self.folder / name
        folder.mkdir(mode=0o700)
        if account is not None:
            os.chown(folder, account.pw_uid, account.pw_gid)
        return folder

    def _start(self, name: str, url: str, executor_class: type[TCPExecutor],
               command: list[str], holder: socket.socket, folder: Path,
               account: pwd.struct_passwd | None, stop_signal: int) -> PrivateServer:
        port = holder.getsockname()[1]
        log = self.folder / f"{folder.name}.log"
        if shutil.which("setpriv"):  # util-linux: the server dies with this process
            command = ["setpriv", f"--pdeathsig={signal.Signals(stop_signal).name}", "--",
                       *command]
        output = log.open("w")
        executor = executor_class(
            command, host="127.0.0.1", port=port, timeout=START_TIMEOUT_SECONDS,
            stop_signal=stop_signal, stdin=subprocess.DEVNULL, stdout=output,
            stderr=subprocess.STDOUT, cwd=str(folder), popen_kwargs=_as_user(account))
        started = time.monotonic()
        try:
            executor.start()
        except Exception as error:  # noqa: BLE001 - reported with the server's own words
            executor.kill()
            holder.close()
            output.close()
            raise ServerError(f"the private {name} did not start ({error!r}); its log:\n"
                              f"{log.read_text()[-3000:]}") from error
        server = PrivateServer(name, url, executor, holder, output)
        self.servers.append(server)
        print(f"make test: a private {name} on 127.0.0.1:{port} "
              f"(ready in {time.monotonic() - started:.1f} s)", file=sys.stderr)
        return server


def _as_user(account: pwd.struct_passwd | None) -> dict:
    """subprocess arguments that run a program as `account` (None: as this user)."""
    if account is None:
        return {}
    return {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}
