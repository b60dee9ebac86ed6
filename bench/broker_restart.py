"""Redis restart during a push fan-out (issue 28, item 1): does every subscriber still get the
change, does a Celery process die of it, and do pushes resume by themselves afterwards?

    .venv/bin/python bench/broker_restart.py                    # 1000 subscribers, 5 s outage
    .venv/bin/python bench/broker_restart.py --subscriptions 20 --outage 2      # quick

The production topology of `bench/push_fanout.py` (gunicorn, `make worker`'s two workers and
`make beat`), with its data and its MQTT listener on the local Mosquitto (BENCH_MQTT_URL as there),
except that each Celery process runs under `config.keep_running` as the Makefile runs it
(a process that dies is started again), and that the broker is a private Redis started for
the run (`tests/private_servers.py`, so requirements-test.txt must be installed): the
machine's Redis is not touched. BENCH_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/serviceorchestration_broker_restart_bench, is created
fresh.

1. r1: one `service-instances/update` of the shared instance; as soon as the first
   subscriber has r1 (`--stop-at first-arrival`, the default) or right after the update
   call (`--stop-at update`), Redis is stopped, kept down for `--outage` seconds (default 5)
   and started again on the same port (it keeps nothing on disk: what was queued in it is
   gone). Then the arrivals until every subscriber has r1 or the timeout.
2. r2: a second update once r1's wait is over, and the arrivals until every subscriber has it.

Prints, per update, the time from the update call to 50 %, 90 %, 99 % and 100 % of the
subscribers (for r1 also from Redis's return, and how many got it before the stop, while
Redis was down and after), missing, duplicate, stale, early (before the update: late r1s, for
r2) and odd messages; when Redis stopped and came back; per Celery process, the deaths
`config.keep_running` noted ("keep_running:" lines of its log) and the starts after the
first. Exit status 1 when a subscriber never got r1 or r2. `--logs DIR` keeps the logs.
"""
import argparse
import contextlib
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import ROOT, create_database, running_server, server_environment  # noqa: E402
from push_fanout import (  # noqa: E402
    MISADDRESSED,
    NEW,
    UNREADABLE,
    Listener,
    await_arrivals,
    celery_processes,
    delivery_statuses,
    fanout_timeout,
    load,
    print_log_problems,
    queued_work,
    raise_on_sigterm,
    readiness_mark,
    seconds_text,
    subscribe_all,
    topic_prefix,
    topology_environment,
    update_instance,
    wait_until_quiet,
)

sys.path.insert(1, str(ROOT))
from tests.private_servers import PrivateServer, PrivateServers  # noqa: E402

DATABASE_URL = os.environ.get(
    "BENCH_DATABASE_URL",
    "postgres://postgres@127.0.0.1:5432/serviceorchestration_broker_restart_bench")
TOPOLOGY = "production"
RESTART_MARK = "keep_running:"


# --- the restart ----------------------------------------------------------------------------

def restart_redis(redis: PrivateServer, listener: Listener, update_at: float, stop_at: str,
                  outage: float, timeout: float) -> dict:
    """Stop Redis (after the first arrival, or at once), keep it down for `outage` seconds,
    start it again; when each happened (time.monotonic()) and how many subscribers had r1
    when it stopped."""
    if stop_at == "first-arrival" and not listener.wait_for(1, update_at + timeout):
        print("  no arrival within the timeout: stopping Redis anyway", flush=True)
    reached = len(listener.reached)
    stopped_at = time.monotonic()
    with redis.executor.stopped():
        down_at = time.monotonic()
        print(f"  Redis down {down_at - update_at:.2f} s after the update (r1 at {reached} "
              f"subscribers when it stopped); queued (changes, evaluations, notifications) "
              f"{queued_work(DATABASE_URL)}, deliveries {delivery_statuses(DATABASE_URL)}",
              flush=True)
        time.sleep(max(0.0, outage - (time.monotonic() - down_at)))
        starting_at = time.monotonic()
    back_at = time.monotonic()
    print(f"  Redis answering again {back_at - update_at:.2f} s after the update", flush=True)
    return {"reached": reached, "stopped_at": stopped_at, "down_at": down_at,
            "starting_at": starting_at, "back_at": back_at}


def arrival_periods(records: list[tuple[float, str, str]], restart: dict) -> dict[str, int]:
    """How many subscribers got the new result first before Redis was stopped, while it was
    down (or starting) and after it answered again."""
    first: dict[str, float] = {}
    for at, topic, kind in sorted(records):
        if kind == NEW:
            first.setdefault(topic, at)
    return {"before": sum(at < restart["stopped_at"] for at in first.values()),
            "during": sum(restart["stopped_at"] <= at < restart["back_at"]
                          for at in first.values()),
            "after": sum(at >= restart["back_at"] for at in first.values())}


def process_restarts(logs: Path, names: list[str]) -> dict[str, dict[str, int]]:
    """Per Celery process: the deaths keep_running noted and the starts after the first."""
    counts = {}
    for name in names:
        text = (logs / f"{name}.log").read_text()
        counts[name] = {"deaths": text.count(RESTART_MARK),
                        "restarts": max(0, text.count(readiness_mark(name)) - 1)}
    return counts


def restart_lines(logs: Path, names: list[str]) -> list[str]:
    """keep_running's lines, each with the log line before it (what the process said last)."""
    lines = []
    for name in names:
        log = (logs / f"{name}.log").read_text().splitlines()
        for number, line in enumerate(log):
            if line.startswith(RESTART_MARK):
                lines += [f"  {name}: {log[number - 1]}" if number else "",
                          f"  {name}: {line}"]
    return [line for line in lines if line]


# --- lines ----------------------------------------------------------------------------------

def relative_text(seconds: float) -> str:
    return f"{seconds:.2f} s after" if seconds >= 0 else f"{-seconds:.2f} s before"


def update_line(label: str, fanout: dict, since: str = "") -> str:
    times = fanout["milestones"]
    odd = fanout[UNREADABLE] + fanout[MISADDRESSED]
    verdict = "" if fanout["missing"] == 0 else "   LOST"
    return (f"{label:<4}  {fanout['reached']}/{fanout['subscribers']} in "
            f"{seconds_text(times[1.0] if fanout['missing'] == 0 else None)} from the update"
            f"{since} (50% {seconds_text(times[0.5])}, 90% {seconds_text(times[0.9])}, "
            f"99% {seconds_text(times[0.99])}, first {seconds_text(fanout['first'])})   "
            f"missing {fanout['missing']}   duplicates {fanout['duplicates']}   "
            f"stale {fanout['stale']}   early {fanout['early']}   odd {odd}{verdict}")


def r1_line(fanout: dict, update_at: float, restart: dict, periods: dict[str, int]) -> str:
    since = ""
    if fanout["missing"] == 0:
        last_at = update_at + fanout["milestones"][1.0]
        since = f", {relative_text(last_at - restart['back_at'])} Redis was back"
    return (update_line("r1", fanout, since) + f"   got it before the stop "
            f"{periods['before']}, while Redis was down {periods['during']}, after "
            f"{periods['after']}")


def redis_line(update_at: float, restart: dict) -> str:
    return (f"redis  stopped {restart['stopped_at'] - update_at:.2f} s after the r1 update "
            f"(r1 at {restart['reached']} subscribers), down "
            f"{restart['starting_at'] - restart['down_at']:.2f} s, answering again "
            f"{restart['back_at'] - update_at:.2f} s after the update (its start took "
            f"{restart['back_at'] - restart['starting_at']:.2f} s)")


def r2_line(fanout: dict, update_at: float, restart: dict) -> str:
    return (update_line("r2", fanout) + f"   the update {update_at - restart['back_at']:.2f} s "
            "after Redis was back")


def celery_line(counts: dict[str, dict[str, int]], running: dict[str, bool]) -> str:
    parts = [f"{name} died {count['deaths']}x, started again {count['restarts']}x, "
             f"{'running' if running[name] else 'NOT running'} at the end"
             for name, count in counts.items()]
    return "celery  " + "; ".join(parts) + " (each under config.keep_running)"


# --- the run --------------------------------------------------------------------------------

def measure(arguments: argparse.Namespace, logs: Path,
            redis: PrivateServer) -> tuple[list[str], bool]:
    """Fresh database, processes up, data, subscriptions, r1 with the restart, r2; the lines,
    and whether a subscriber never got r1 or r2."""
    subscribers, run = arguments.subscriptions, uuid.uuid4().hex[:8]
    print(f"{TOPOLOGY} with a Redis restart: {subscribers} subscribers", flush=True)
    create_database(DATABASE_URL, fresh=True)
    environment = topology_environment(TOPOLOGY, DATABASE_URL, redis.url,
                                       server_environment(DATABASE_URL))
    prefix, first, second = topic_prefix(f"{run}-restart"), f"r1-{run}", f"r2-{run}"
    timeout = arguments.timeout or fanout_timeout(subscribers)
    with contextlib.ExitStack() as stack:
        stack.enter_context(running_server(environment, logs / f"{TOPOLOGY}-gunicorn.log"))
        processes = stack.enter_context(celery_processes(environment, logs, keep_running=True))
        port = int(environment["PORT"])
        load(port, subscribers)
        wait_until_quiet(DATABASE_URL)
        r1_listener = stack.enter_context(Listener(prefix, first))
        subscribe_all(port, subscribers, arguments.clients, prefix)
        wait_until_quiet(DATABASE_URL)

        r1_at = update_instance(port, first)
        restart = restart_redis(redis, r1_listener, r1_at, arguments.stop_at, arguments.outage,
                                timeout)
        r1 = await_arrivals(r1_listener, r1_at, subscribers, timeout + arguments.outage,
                            arguments.grace)
        periods = arrival_periods(r1_listener.classified(), restart)

        r2_listener = stack.enter_context(Listener(prefix, second))
        r2_at = update_instance(port, second)
        r2 = await_arrivals(r2_listener, r2_at, subscribers, timeout, arguments.grace)
        print(f"  notification deliveries: {delivery_statuses(DATABASE_URL)}", flush=True)
        running = {name: process.poll() is None for name, process in processes.items()}
    print_log_problems(logs, TOPOLOGY)
    names = list(processes)
    for line in restart_lines(logs, names):
        print(line, flush=True)
    lines = [r1_line(r1, r1_at, restart, periods), redis_line(r1_at, restart),
             celery_line(process_restarts(logs, names), running), r2_line(r2, r2_at, restart)]
    return lines, bool(r1["missing"] or r2["missing"])


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscriptions", type=int, default=1000,
                        help="subscribers, each a consumer of its own (default 1000)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent subscribe clients")
    parser.add_argument("--outage", type=float, default=5.0,
                        help="seconds Redis stays down (default 5)")
    parser.add_argument("--stop-at", choices=("first-arrival", "update"),
                        default="first-arrival",
                        help="stop Redis when the first subscriber has r1 (default) or right "
                             "after the update call")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds to wait for every arrival of an update (default "
                             "max(120, N / 20), plus the outage for r1)")
    parser.add_argument("--grace", type=float, default=3.0,
                        help="seconds to keep counting duplicates after the last arrival")
    parser.add_argument("--logs", type=Path, default=None,
                        help="keep the server, worker and beat logs in this directory")
    arguments = parser.parse_args(argv)
    if arguments.subscriptions < 1 or arguments.clients < 1 or arguments.outage < 0:
        parser.error("--subscriptions and --clients must be at least 1, --outage at least 0")
    return arguments


def main() -> None:
    arguments = parse_arguments()
    raise_on_sigterm()
    with contextlib.ExitStack() as stack:
        logs = arguments.logs or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        logs.mkdir(parents=True, exist_ok=True)
        servers = PrivateServers()
        stack.callback(servers.stop_all)
        lines, lost = measure(arguments, logs, servers.start_redis())
    print()
    print(*lines, sep="\n")
    if lost:
        sys.exit("lost: a subscriber never got r1 or r2")


if __name__ == "__main__":
    main()
