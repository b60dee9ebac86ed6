"""bench/broker_restart.py runs end to end on a few subscribers: the production topology with
each Celery process under config.keep_running, Redis stopped right after the first update and
started again, and every subscriber gets both updates (exit status 0) with the figures
printed. Its Redis is private; its database is its own on the test run's PostgreSQL."""
import os
import re
import subprocess
import sys

from tests.bench_modules import BENCH, load_bench

broker_restart = load_bench("broker_restart")
push_fanout = load_bench("push_fanout")
SUBSCRIBERS = 5


def test_celery_processes_run_under_keep_running_as_the_makefile_runs_them(tmp_path) -> None:
    commands = push_fanout.celery_commands(tmp_path / "schedule", keep_running=True)
    makefile = (BENCH.parent / "Makefile").read_text()

    assert "KEEP_RUNNING := $(PY) -m config.keep_running --" in makefile
    for name, command in commands.items():
        assert command[:4] == [sys.executable, "-m", "config.keep_running", "--"]
        assert command[4:] == push_fanout.celery_commands(tmp_path / "schedule")[name]
        assert re.search(rf"^{name}: .*\n(\t.*\n)*?\t\$\(KEEP_RUNNING\) \$\(VENV\)/bin/celery ",
                         makefile, re.MULTILINE), name


def bench_database_url() -> str:
    """A database of its own on the test run's PostgreSQL."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        return broker_restart.DATABASE_URL
    return url.rsplit("/", 1)[0] + "/serviceorchestration_broker_restart_test"


def test_it_loses_nothing_when_redis_restarts_and_prints_its_figures(tmp_path) -> None:
    result = subprocess.run(
        [sys.executable, str(BENCH / "broker_restart.py"), "--subscriptions", str(SUBSCRIBERS),
         "--outage", "2", "--stop-at", "update", "--grace", "1", "--logs", str(tmp_path)],
        check=False, cwd=BENCH.parent,
        env={**os.environ, "BENCH_DATABASE_URL": bench_database_url(),
             "BENCH_MQTT_URL": os.environ["MQTT_BROKER_URL"]},
        capture_output=True, text=True, timeout=300)
    output = result.stdout

    assert result.returncode == 0, output[-4000:] + result.stderr[-4000:]
    lines = {line.split()[0]: line for line in output.split("\n\n")[-1].splitlines()}
    assert set(lines) == {"r1", "redis", "celery", "r2"}
    for update in ("r1", "r2"):
        assert f"{SUBSCRIBERS}/{SUBSCRIBERS} in " in lines[update]
        assert "missing 0" in lines[update] and "odd 0" in lines[update]
    assert re.search(r"stopped \d+\.\d\d s after the r1 update \(r1 at 0 subscribers\), "
                     r"down 2\.\d\d s", lines["redis"]), lines["redis"]
    processes = re.findall(r"(\S+) died (\d+)x, started again (\d+)x, running at the end",
                           lines["celery"])
    assert [name for name, _, _ in processes] == ["worker-main", "worker-http", "beat"]
    assert all(died == started for _, died, started in processes), lines["celery"]
