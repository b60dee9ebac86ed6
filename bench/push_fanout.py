"""Push fan-out over MQTT: N subscribers of one shared provider instance, one update of that
instance, and how long until every subscriber has the new result; the baseline of the push
fan-out issue. Prints, per topology, the time from the update call to 50 %, 90 %, 99 % and
100 % of the subscribers, arrivals/s, duplicates, subscribe calls/s with 8 concurrent
clients (and, as the same server's baseline, monitor/echo calls/s made the same way), then
the raw broker rate and the ratio of each fan-out to it.

    .venv/bin/python bench/push_fanout.py                         # 10 000 subscribers, both
    .venv/bin/python bench/push_fanout.py --subscriptions 200 --topology defaults   # quick

Data: one instance `PushProvider|pushService|1.0.0` (one generic_http interface on
127.0.0.1, policy NONE: no tokens; nothing ever connects to it) with metadata
`{"benchRevision": "initial"}`, and N consumers `PushConsumer<i>`, each with one rule to it
(bulk creates of 1000 entries). Once the rule changes are processed (nothing queued in the
database), each consumer subscribes itself (`Authorization: Bearer SYSTEM//PushConsumer<i>`,
`--clients` threads with a kept-alive connection each) with an MQTT notify interface of its
own topic `bench/push-fanout/<run>/<i>`, without `?trigger=true` (trigger would push the
current result at once, in the subscribe's transaction). When nothing is queued any more,
one `service-instances/update` sets `benchRevision` to a value unique to the run: every
subscription's result changes, and one push per subscriber is expected.

A listener (bench/mqtt_reader.py, `bench/push-fanout/<run>/#`, QoS 1, one shared
subscription over four connections, so that Mosquitto's 20 messages in flight per client do
not hold the arrivals back) on the local Mosquitto (BENCH_MQTT_URL, default
mqtt://127.0.0.1:1883) is connected before the first subscribe. A message counts as arrived when it
carries the run's revision for the consumer its topic belongs to; the figures are the first
such arrival per topic, timed from just before the update call (payloads are read as JSON
after the run, not while the service sends). Also counted: duplicates
(further arrivals of the new result on a topic), stale ones (the old result after the update),
early ones (anything before the update: initial pushes that should not happen) and unreadable
or misaddressed ones. The wait ends when every subscriber has it (then `--grace` seconds more
to catch duplicates) or at `--timeout` (default max(120 s, N / 20 s)); missing subscribers,
failed subscribes or odd messages make the run invalid (exit status 1).

Topologies (`--topology defaults|production|both`), each on a fresh PostgreSQL database
(BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/serviceorchestration_push_bench,
dropped and created again per topology):
- defaults: gunicorn as `make run` starts it, no Celery broker (tasks in-process: each web
  worker's scheduler thread evaluates subscriptions, its pool sends);
- production: the same server with Redis as broker (BENCH_REDIS_URL, default
  redis://127.0.0.1:6379/5, FLUSHDB first), the two Celery workers of `make worker`
  (worker-main, worker-http) and `celery beat` as `make beat` (its schedule file in the
  scratch directory, not the work tree), each in its own process group, stopped at the end.

Raw broker rate: N QoS-1 messages of the size of one notification, published by one paho
connection and received by one listener connection, at most 500 unreceived at a time (Mosquitto drops
QoS-1 messages queued beyond its max_queued_messages, 1000 by default). `--logs DIR` keeps
the server, worker and beat logs.
"""
import argparse
import collections
import contextlib
import http.client
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (  # noqa: E402
    ECHO,
    INSTANCES,
    ROOT,
    RULES,
    SYSOP,
    create_database,
    post_json,
    running_server,
    server_environment,
)
from mqtt_reader import ProtocolError, Subscriber  # noqa: E402

DATABASE_URL = os.environ.get(
    "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/serviceorchestration_push_bench")
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/5")
# The Mosquitto the server notifies and the listener reads (BENCH_MQTT_URL, a plain mqtt:// URL).
MQTT_URL = os.environ.get("BENCH_MQTT_URL", "mqtt://127.0.0.1:1883")
MQTT_HOST, MQTT_PORT = urlsplit(MQTT_URL).hostname or "127.0.0.1", urlsplit(MQTT_URL).port or 1883
SUBSCRIBE = "/serviceorchestration/orchestration/subscribe"
UPDATE = "/serviceorchestration/orchestration/mgmt/service-instances/update"
PROVIDER, SERVICE, VERSION = "PushProvider", "pushService", "1.0.0"
INSTANCE_ID = f"{PROVIDER}|{SERVICE}|{VERSION}"
INITIAL_REVISION = "initial"
BULK = 1000
TOPIC_ROOT = "bench/push-fanout"
QUEUE = "serviceorchestration"  # CELERY_TASK_DEFAULT_QUEUE's default, as `make worker` uses
HTTP_CONCURRENCY = "8"  # NOTIFY_HTTP_CONCURRENCY's default, as `make worker-http` uses
KEEP_RUNNING = [sys.executable, "-m", "config.keep_running", "--"]  # the Makefile's KEEP_RUNNING
SUBSCRIBE_GOAL = 400.0  # subscribe calls/s with 8 concurrent clients
# Every one of GOAL_SUBSCRIBERS subscribers has its new result within this many seconds
# (issue 34); with LARGE_GOAL_SUBSCRIBERS or more, the production topology within
# LARGE_FANOUT_GOAL_SECONDS (`make bench` runs it with 100 000).
GOAL_SUBSCRIBERS = 10_000
FANOUT_GOAL_SECONDS = {"defaults": 10.0, "production": 5.0}
LARGE_GOAL_SUBSCRIBERS = 100_000
LARGE_FANOUT_GOAL_SECONDS = {"production": 60.0}
RAW_WINDOW = 500
ECHO_CALLS = 4000  # monitor/echo calls of the subscribe rate's baseline
LISTENER_CONNECTIONS = 4  # the arrivals' listener (see Listener)
FRACTIONS = (0.5, 0.9, 0.99, 1.0)
NEW, OLD, UNREADABLE, MISADDRESSED = "new", "old", "unreadable", "misaddressed"


# --- data -----------------------------------------------------------------------------------

def consumer_name(index: int) -> str:
    return f"PushConsumer{index}"


def topic_prefix(run: str) -> str:
    """The topics of one run's subscribers end with the subscriber's index after this."""
    return f"{TOPIC_ROOT}/{run}/"


def subscriber_index(topic: str, prefix: str) -> int | None:
    """The index of the subscriber a topic under `prefix` belongs to (None: not one)."""
    rest = topic[len(prefix):] if topic.startswith(prefix) else ""
    return int(rest) if rest.isdigit() else None


def instance_interface() -> dict:
    return {"templateName": "generic_http", "protocol": "http", "policy": "NONE",
            "properties": {"accessAddresses": ["127.0.0.1"], "accessPort": 20000,
                           "basePath": "/push", "operations": {"query": {"path": "/query",
                                                                         "method": "GET"}}}}


def instance_create_body() -> dict:
    return {"instances": [{"systemName": PROVIDER, "serviceDefinitionName": SERVICE,
                           "version": VERSION, "metadata": {"benchRevision": INITIAL_REVISION},
                           "interfaces": [instance_interface()]}]}


def instance_update_body(revision: str) -> dict:
    """Same interface, new metadata: every subscriber's result changes."""
    return {"instances": [{"instanceId": INSTANCE_ID, "metadata": {"benchRevision": revision},
                           "interfaces": [instance_interface()]}]}


def rule_bulks(subscribers: int, bulk: int = BULK) -> list[list[dict]]:
    """One rule per consumer, all to the shared instance, in create bodies' entry lists."""
    return [[{"consumer": consumer_name(index), "priority": 1, "serviceInstanceId": INSTANCE_ID}
             for index in range(start, min(start + bulk, subscribers))]
            for start in range(0, subscribers, bulk)]


def subscribe_body(topic: str) -> dict:
    return {"orchestrationRequest": {"serviceRequirement": {"serviceDefinition": SERVICE}},
            "notifyInterface": {"protocol": "MQTT", "properties": {"topic": topic}}}


def subscriber_slices(subscribers: int, clients: int) -> list[range]:
    """The subscriber indices each client thread subscribes (interleaved, none empty)."""
    return [range(client, subscribers, clients) for client in range(min(clients, subscribers))]


def fanout_timeout(subscribers: int) -> float:
    """Generous: today's push path manages about 50 notifications/s."""
    return max(120.0, subscribers / 20)


# --- what arrived ---------------------------------------------------------------------------

def message_kind(payload: bytes, revision: str, receiver: str) -> str:
    """What one notification carries: NEW (the run's revision, for `receiver`), OLD (another
    revision), MISADDRESSED (for another consumer) or UNREADABLE."""
    try:
        message = json.loads(payload)
        results = message["payload"]["results"]
        revisions = {(entry.get("metadata") or {}).get("benchRevision") for entry in results}
    except (ValueError, KeyError, TypeError, AttributeError):
        return UNREADABLE
    if message.get("receiver") != receiver:
        return MISADDRESSED
    return NEW if revision in revisions else OLD


def nearest_rank(values: list[float], fraction: float) -> float | None:
    """The nearest-rank percentile of sorted `values` (None when empty)."""
    if not values:
        return None
    return values[max(0, math.ceil(fraction * len(values)) - 1)]


def milestones(first_arrivals: list[float], subscribers: int) -> dict[float, float | None]:
    """Seconds until each fraction of all `subscribers` had the new result (None: never):
    the k-th first arrival, k = ceil(fraction × subscribers)."""
    ordered = sorted(first_arrivals)
    return {fraction: (ordered[k - 1] if len(ordered) >= k else None)
            for fraction in FRACTIONS
            for k in [max(1, math.ceil(fraction * subscribers))]}


def fanout_figures(records: list[tuple[float, str, str]], update_at: float,
                   subscribers: int) -> dict:
    """The fan-out's figures from the listener's (arrival time, topic, kind) records."""
    first: dict[str, float] = {}
    counts: collections.Counter = collections.Counter()
    for at, topic, kind in sorted(records):
        if at < update_at:
            counts["early"] += 1
        elif kind == NEW and topic in first:
            counts["duplicates"] += 1
        elif kind == NEW:
            first[topic] = at - update_at
        else:
            counts[{OLD: "stale"}.get(kind, kind)] += 1
    times = milestones(list(first.values()), subscribers)
    earliest, last = min(first.values(), default=None), max(first.values(), default=None)
    return {"subscribers": subscribers, "reached": len(first),
            "missing": subscribers - len(first), "milestones": times, "first": earliest,
            "last": last, "arrivals_per_second": rate(len(first), last),
            # after the first arrival: the sending rate without the wait for evaluation
            "steady_per_second": rate(len(first) - 1, last - earliest if first else None),
            **{key: counts[key] for key in ("duplicates", "stale", "early", UNREADABLE,
                                            MISADDRESSED)}}


def fanout_valid(figures: dict) -> bool:
    return not any(figures[key] for key in ("missing", "stale", "early", UNREADABLE,
                                            MISADDRESSED))


def rate(count: int, seconds: float | None) -> float | None:
    return count / seconds if seconds else None


def subscribe_figures(outcomes: list[tuple[int, float]], seconds: float, clients: int) -> dict:
    """Calls/s, latency p50/p99 (ms) and statuses of the subscribe calls, each
    (HTTP status or 0 for a connection failure, seconds it took)."""
    latencies = sorted(latency * 1000 for _, latency in outcomes)
    statuses = collections.Counter(status for status, _ in outcomes)
    return {"calls": len(outcomes), "seconds": seconds, "clients": clients,
            "calls_per_second": rate(len(outcomes), seconds),
            "p50_ms": nearest_rank(latencies, 0.5), "p99_ms": nearest_rank(latencies, 0.99),
            "statuses": dict(statuses),
            "failures": sum(count for status, count in statuses.items()
                            if status not in (200, 201))}


# --- lines ----------------------------------------------------------------------------------

def seconds_text(value: float | None) -> str:
    return "never" if value is None else f"{value:.2f} s"


def number_text(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def topology_line(topology: str, fanout: dict, subscribe: dict) -> str:
    times = fanout["milestones"]
    verdict = "" if fanout_valid(fanout) and not subscribe["failures"] else "   INVALID"
    return (f"{topology:<10}  fan-out {fanout['reached']}/{fanout['subscribers']} in "
            f"{seconds_text(times[1.0] if fanout['missing'] == 0 else None)} "
            f"(50% {seconds_text(times[0.5])}, 90% {seconds_text(times[0.9])}, "
            f"99% {seconds_text(times[0.99])}, first {seconds_text(fanout['first'])})   "
            f"{number_text(fanout['arrivals_per_second'])} arrivals/s "
            f"({number_text(fanout['steady_per_second'])} after the first)   "
            f"missing {fanout['missing']}   duplicates {fanout['duplicates']}   "
            f"stale {fanout['stale']}   early {fanout['early']}   "
            f"odd {fanout[UNREADABLE] + fanout[MISADDRESSED]}   |   "
            f"subscribe {number_text(subscribe['calls_per_second'])} calls/s "
            f"({subscribe['calls']} calls, {subscribe['clients']} clients, "
            f"p50 {number_text(subscribe['p50_ms'])} ms, "
            f"p99 {number_text(subscribe['p99_ms'])} ms, "
            f"failed {subscribe['failures']}){verdict}")


def raw_line(raw: dict) -> str:
    verdict = "" if raw["received"] == raw["messages"] else "   INVALID (messages lost)"
    return (f"{'raw broker':<10}  {raw['received']}/{raw['messages']} QoS-1 messages of "
            f"{raw['payload_bytes']} bytes in {number_text(raw['seconds'], 3)} s   "
            f"{number_text(raw['messages_per_second'])} messages/s "
            f"(one publisher connection, one subscriber){verdict}")


def ratio_lines(results: dict[str, tuple[dict, dict]], raw: dict) -> list[str]:
    lines = []
    for topology, (fanout, subscribe) in results.items():
        fanout_rate, raw_rate = fanout["arrivals_per_second"], raw["messages_per_second"]
        ratio = fanout_rate / raw_rate if fanout_rate and raw_rate else None
        calls, echo = subscribe["calls_per_second"], subscribe.get("echo_per_second")
        share = f" ({number_text(calls / echo, 2)} of echo's {number_text(echo)} with the " \
            "same clients)" if calls and echo else ""
        met = "met" if calls and calls >= SUBSCRIBE_GOAL else "NOT met"
        lines.append(f"{topology:<10}  fan-out arrivals/s / raw broker messages/s "
                     f"{number_text(ratio, 4)}   subscribe {number_text(calls)} calls/s"
                     f"{share} goal >= {SUBSCRIBE_GOAL:.0f} with 8 clients {met}")
        lines.append(fanout_goal_line(topology, fanout))
    return lines


def fanout_goal_line(topology: str, fanout: dict) -> str:
    """The fan-out goal: every subscriber notified (a valid run) within the topology's limit,
    judged only with GOAL_SUBSCRIBERS subscribers or more (LARGE_GOAL_SUBSCRIBERS: the
    large goal)."""
    goal, last = FANOUT_GOAL_SECONDS[topology], fanout["milestones"][1.0]
    counted = GOAL_SUBSCRIBERS
    if fanout["subscribers"] >= LARGE_GOAL_SUBSCRIBERS and topology in LARGE_FANOUT_GOAL_SECONDS:
        goal, counted = LARGE_FANOUT_GOAL_SECONDS[topology], LARGE_GOAL_SUBSCRIBERS
    if fanout["subscribers"] < GOAL_SUBSCRIBERS:
        verdict = f"not judged (fewer than {GOAL_SUBSCRIBERS} subscribers)"
    elif last is not None and last <= goal and fanout_valid(fanout):
        verdict = "met"
    else:
        verdict = "NOT met"
    return (f"{topology:<10}  all {fanout['subscribers']} notified after "
            f"{number_text(last)} s   goal <= {goal:.0f} s for {counted} {verdict}")


# --- processes ------------------------------------------------------------------------------

def topology_environment(topology: str, database_url: str, redis_url: str,
                         base: dict[str, str]) -> dict[str, str]:
    """The environment of the server (and workers): `base` (server_environment's) with the
    broker of the topology: none for `defaults` (tasks in-process), Redis for `production`."""
    broker = redis_url if topology == "production" else ""
    return {**base, "DATABASE_URL": database_url, "CELERY_BROKER_URL": broker,
            "MQTT_BROKER_URL": f"mqtt://{MQTT_HOST}:{MQTT_PORT}",
            "CELERY_TASK_DEFAULT_QUEUE": QUEUE, "NOTIFY_HTTP_CONCURRENCY": HTTP_CONCURRENCY}


def celery_commands(schedule: Path, keep_running: bool = False) -> dict[str, list[str]]:
    """`make worker-main`, `make worker-http` and `make beat` (its schedule file at
    `schedule`); with `keep_running` each under config.keep_running as those targets run it
    (this bench's own runs start Celery directly)."""
    wrapper = KEEP_RUNNING if keep_running else []
    celery = [*wrapper, sys.executable, "-m", "celery", "--app", "config"]
    return {
        "worker-main": [*celery, "worker", "--hostname", "main@%h", "--loglevel", "INFO",
                        "--queues", f"{QUEUE},{QUEUE}.mqtt"],
        "worker-http": [*celery, "worker", "--hostname", "http@%h", "--loglevel", "INFO",
                        "--queues", f"{QUEUE}.http", "--pool", "threads",
                        "--concurrency", HTTP_CONCURRENCY],
        "beat": [*celery, "beat", "--loglevel", "INFO", "--schedule", str(schedule)],
    }


def readiness_mark(name: str) -> str:
    """The log text that says the process is up."""
    return "beat: Starting" if name == "beat" else " ready."


@contextlib.contextmanager
def celery_processes(environment: dict[str, str], logs: Path, keep_running: bool = False):
    """The workers and beat of the production topology (`keep_running`: see celery_commands),
    each in its own process group, all stopped (group by group) when the block ends, however
    it ends."""
    processes: dict[str, subprocess.Popen] = {}
    try:
        for name, command in celery_commands(logs / "celerybeat-schedule",
                                             keep_running).items():
            with open(logs / f"{name}.log", "w") as log:
                processes[name] = subprocess.Popen(command, cwd=ROOT, env=environment,
                                                   stdout=log, stderr=subprocess.STDOUT,
                                                   start_new_session=True)
        for name, process in processes.items():
            wait_until_logged(process, logs / f"{name}.log", readiness_mark(name), name)
        yield processes
    finally:
        for process in processes.values():
            stop_group(process)


def wait_until_logged(process: subprocess.Popen, log: Path, mark: str, name: str,
                      timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while mark not in log.read_text():
        if process.poll() is not None:
            sys.exit(f"{name} exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            sys.exit(f"{name} did not start within {timeout:.0f} s:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)


def stop_group(process: subprocess.Popen, timeout: float = 30) -> None:
    """SIGTERM to the process (a Celery warm shutdown: it lets its pool processes finish
    and stops them; a SIGTERM to each of them would be logged as lost work; config.keep_running
    passes it on to its command), then SIGKILL to its whole group and to the groups its
    children lead (keep_running's command has a session of its own), after `timeout` if it
    has not ended by then."""
    groups = [process.pid, *group_leading_children(process.pid)]
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=timeout)
    for group in groups:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)
    process.wait()


def group_leading_children(pid: int) -> list[int]:
    """The children of `pid` that lead a process group of their own (Linux's /proc; none
    where it cannot be read)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    leading = []
    for child in map(int, children):
        with contextlib.suppress(ProcessLookupError):
            if os.getpgid(child) == child:
                leading.append(child)
    return leading


def flush_redis(url: str) -> None:
    import redis

    redis.Redis.from_url(url).flushdb()


# --- the database, read directly (the bench's own) -----------------------------------------

QUEUED_WORK = """SELECT (SELECT count(*) FROM orchestration_snapshotchange WHERE id > COALESCE(
                            (SELECT max(last_id) FROM subscriptions_feedcursor), 0)),
                        (SELECT count(*) FROM subscriptions_evaluationflag),
                        (SELECT count(*) FROM notifications_notificationdelivery
                          WHERE status IN ('PENDING', 'SENDING'))"""


def queued_work(database_url: str) -> tuple[int, int, int]:
    """Unprocessed catalog changes, subscriptions due for evaluation, unsent notifications."""
    import psycopg

    with psycopg.connect(database_url) as connection:
        return connection.execute(QUEUED_WORK).fetchone()


def wait_until_quiet(database_url: str, timeout: float = 120) -> None:
    """Until nothing is queued twice in a row a second apart (change processing runs every
    2 s and is coalesced by 1 s, so a second look catches what was just being taken)."""
    deadline, quiet = time.monotonic() + timeout, 0
    while quiet < 2:
        work = queued_work(database_url)
        quiet = quiet + 1 if not any(work) else 0
        if time.monotonic() > deadline:
            sys.exit(f"still queued after {timeout:.0f} s (changes, evaluations, "
                     f"notifications): {work}")
        time.sleep(1)


def delivery_statuses(database_url: str) -> dict[str, int]:
    import psycopg

    with psycopg.connect(database_url) as connection:
        return dict(connection.execute(
            "SELECT status, count(*) FROM notifications_notificationdelivery GROUP BY status"
            " ORDER BY status").fetchall())


# --- MQTT -----------------------------------------------------------------------------------

def mqtt_client(role: str):
    """A paho client (the raw rate's publisher)."""
    from paho.mqtt.client import Client
    from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion

    return Client(callback_api_version=CallbackAPIVersion.VERSION2,
                  client_id=f"push-fanout-{role}-{uuid.uuid4().hex[:8]}", clean_session=True,
                  protocol=MQTTProtocolVersion.MQTTv311)


class Listener:
    """A QoS-1 subscription to `prefix#` on the local broker, shared by `connections` lean
    subscribers (bench/mqtt_reader.py; an MQTT shared subscription: each message goes to one
    of them). While the run goes on it keeps every message's arrival time, topic and payload,
    and counts the topics whose message carries the run's revision (`reached`: what the wait
    needs); `classified()` afterwards gives each message's kind (message_kind for the
    consumer its topic belongs to), so that reading JSON takes none of the two cores while
    the service sends. One connection acknowledging ten thousand QoS-1 messages a second can
    fall behind, and Mosquitto then drops what queues up beyond its max_queued_messages for
    it ("Outgoing messages are being dropped" in its log): the listener, not the service,
    would lose notifications."""

    def __init__(self, prefix: str, revision: str, connections: int = LISTENER_CONNECTIONS
                 ) -> None:
        self.prefix, self.revision, self.mark = prefix, revision, revision_mark(revision)
        self.arrivals: list[tuple[float, str, bytes]] = []
        self.reached: set[str] = set()
        self.sample: bytes | None = None  # one notification as sent, for the raw rate
        topic = (f"$share/push-fanout-{uuid.uuid4().hex[:8]}/{prefix}#"
                 if connections > 1 else f"{prefix}#")
        self.subscribers = [
            Subscriber(MQTT_HOST, MQTT_PORT, topic, self._on_message,
                       client_id=f"push-fanout-listener{n}-{uuid.uuid4().hex[:8]}")
            for n in range(connections)]

    def _on_message(self, at: float, topic: str, payload: bytes) -> None:
        self.arrivals.append((at, topic, payload))  # list and set: atomic under the GIL
        if self.mark in payload:
            self.reached.add(topic)
            self.sample = self.sample or payload

    def classified(self) -> list[tuple[float, str, str]]:
        """(arrival time, topic, kind) of every message so far."""
        return [(at, topic, message_kind(payload, self.revision, topic_receiver(topic,
                                                                                self.prefix)))
                for at, topic, payload in list(self.arrivals)]

    def __enter__(self) -> "Listener":
        started = []
        try:
            for subscriber in self.subscribers:
                subscriber.start()
                started.append(subscriber)
        except (OSError, ProtocolError) as error:
            for subscriber in started:
                subscriber.stop()
            sys.exit(f"cannot subscribe on the MQTT broker {MQTT_HOST}:{MQTT_PORT}: {error}")
        return self

    def __exit__(self, *exc_info) -> None:
        for subscriber in self.subscribers:
            subscriber.stop()

    def wait_for(self, count: int, deadline: float) -> bool:
        """Until `count` topics have the new result (True) or the deadline (False)."""
        while len(self.reached) < count:
            if time.monotonic() > deadline:
                return False
            if failed := [s.error for s in self.subscribers if s.error is not None]:
                sys.exit(f"the listener lost the MQTT broker: {failed[0]!r}")
            time.sleep(0.05)
        return True


def revision_mark(revision: str) -> bytes:
    """What a payload carrying `revision` holds: the revision as a JSON string."""
    return json.dumps(revision).encode()


def topic_receiver(topic: str, prefix: str) -> str:
    """The consumer a topic under `prefix` belongs to ("" for none)."""
    index = subscriber_index(topic, prefix)
    return consumer_name(index) if index is not None else ""


class RawListener(Listener):
    """A Listener of one connection that only notes arrival times (the raw rate measures the
    broker, with at most RAW_WINDOW messages unreceived)."""

    def __init__(self, prefix: str, revision: str) -> None:
        super().__init__(prefix, revision, connections=1)

    def _on_message(self, at: float, topic: str, payload: bytes) -> None:
        self.arrivals.append((at, topic, b""))


def raw_broker_rate(messages: int, payload: bytes, timeout: float) -> dict:
    """`messages` QoS-1 publishes on one connection, received by one subscriber; at most
    RAW_WINDOW unreceived at a time (the broker's queue for the subscriber stays bounded)."""
    prefix = topic_prefix(f"raw-{uuid.uuid4().hex[:8]}")
    with RawListener(prefix, revision="") as listener:
        publisher = mqtt_client("publisher")
        publisher.connect(MQTT_HOST, MQTT_PORT, keepalive=60)
        publisher.loop_start()
        try:
            started = time.monotonic()
            deadline = started + timeout
            for number in range(messages):
                while (number - len(listener.arrivals) >= RAW_WINDOW
                       and time.monotonic() < deadline):
                    time.sleep(0.001)
                publisher.publish(f"{prefix}raw", payload, qos=1)
            while len(listener.arrivals) < messages and time.monotonic() < deadline:
                time.sleep(0.01)
        finally:
            publisher.disconnect()
            publisher.loop_stop()
        records = list(listener.arrivals)
    seconds = records[-1][0] - started if records else None
    return {"messages": messages, "received": len(records), "payload_bytes": len(payload),
            "seconds": seconds, "messages_per_second": rate(len(records), seconds)}


# --- HTTP -----------------------------------------------------------------------------------

def call_json(port: int, method: str, path: str, body: dict, headers: dict[str, str]) -> dict:
    """Like harness.post_json for any method (the update is a PUT)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    try:
        connection.request(method, path, json.dumps(body),
                           {"Content-Type": "application/json", **headers})
        answer = connection.getresponse()
        data = answer.read()
    finally:
        connection.close()
    if answer.status >= 300:
        raise SystemExit(f"{method} {path}: {answer.status} {data[:500]!r}")
    return json.loads(data or b"null")


def load(port: int, subscribers: int) -> None:
    started = time.monotonic()
    post_json(port, INSTANCES, instance_create_body(), SYSOP)
    for entries in rule_bulks(subscribers):
        post_json(port, RULES, {"entries": entries}, SYSOP)
    print(f"  loaded 1 instance and {subscribers} rules in "
          f"{time.monotonic() - started:.1f} s", flush=True)


def subscribe_slice(port: int, indices: range, prefix: str) -> list[tuple[int, float]]:
    """One client: subscribe each consumer of `indices` in turn on a kept-alive connection;
    (status, seconds) per call (status 0: the connection failed twice)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    outcomes = []
    try:
        for index in indices:
            body = json.dumps(subscribe_body(f"{prefix}{index}"))
            headers = {"Content-Type": "application/json",
                       "Authorization": f"Bearer SYSTEM//{consumer_name(index)}"}
            started = time.monotonic()
            status = subscribe_once(connection, body, headers)
            outcomes.append((status, time.monotonic() - started))
    finally:
        connection.close()
    return outcomes


def subscribe_once(connection: http.client.HTTPConnection, body: str,
                   headers: dict[str, str]) -> int:
    """The status of one subscribe; a dropped kept-alive connection is reopened once (a
    repeated subscribe overwrites in place and answers 200)."""
    for attempt in range(2):
        try:
            connection.request("POST", SUBSCRIBE, body, headers)
            answer = connection.getresponse()
            answer.read()
            return answer.status
        except (OSError, http.client.HTTPException):
            connection.close()
    return 0


def echo_slice(port: int, calls: int) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        for _ in range(calls):
            connection.request("GET", ECHO)
            connection.getresponse().read()
    finally:
        connection.close()


def echo_rate(port: int, clients: int, calls: int = ECHO_CALLS) -> float:
    """Calls/s of monitor/echo made as the subscribe calls are (the same number of clients,
    each on a kept-alive connection): the same server's baseline for the subscribe rate,
    measured in the same run, since this machine's speed drifts."""
    started = time.monotonic()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(lambda _: echo_slice(port, calls // clients), range(clients)))
    return (calls // clients) * clients / (time.monotonic() - started)


def subscribe_all(port: int, subscribers: int, clients: int, prefix: str) -> dict:
    slices = subscriber_slices(subscribers, clients)
    started = time.monotonic()
    with ThreadPoolExecutor(len(slices)) as pool:
        outcomes = [outcome for part in pool.map(lambda s: subscribe_slice(port, s, prefix),
                                                 slices) for outcome in part]
    figures = subscribe_figures(outcomes, time.monotonic() - started, len(slices))
    print(f"  subscribed {figures['calls']} in {figures['seconds']:.1f} s, statuses "
          f"{figures['statuses']}", flush=True)
    return figures


# --- one topology ---------------------------------------------------------------------------

def measure_topology(topology: str, arguments: argparse.Namespace, logs: Path,
                     run: str) -> tuple[dict, dict, bytes | None]:
    """Fresh database (and Redis), processes up, data, subscriptions, the update, arrivals.
    Returns (fan-out figures, subscribe figures, one notification as sent)."""
    print(f"{topology}: {arguments.subscriptions} subscribers", flush=True)
    prefix, revision = topic_prefix(f"{run}-{topology}"), f"updated-{run}"
    with contextlib.ExitStack() as stack:
        port = topology_loaded(topology, arguments.subscriptions, logs, stack)
        with Listener(prefix, revision) as listener:
            subscribe = subscribe_all(port, arguments.subscriptions, arguments.clients, prefix)
            subscribe["echo_per_second"] = echo_rate(port, arguments.clients)
            wait_until_quiet(DATABASE_URL)
            fanout = fan_out(port, listener, revision, arguments)
        print(f"  notification deliveries: {delivery_statuses(DATABASE_URL)}", flush=True)
    print_log_problems(logs, topology)
    return fanout, subscribe, listener.sample


def topology_loaded(topology: str, subscribers: int, logs: Path,
                    stack: contextlib.ExitStack) -> int:
    """A fresh database (and Redis), the topology's processes up until `stack` closes, the
    instance and the subscribers' rules loaded and processed; the server's port."""
    create_database(DATABASE_URL, fresh=True)
    environment = topology_environment(topology, DATABASE_URL, REDIS_URL,
                                       server_environment(DATABASE_URL))
    if topology == "production":
        flush_redis(REDIS_URL)
    stack.enter_context(running_server(environment, logs / f"{topology}-gunicorn.log"))
    if topology == "production":
        stack.enter_context(celery_processes(environment, logs))
    port = int(environment["PORT"])
    load(port, subscribers)
    wait_until_quiet(DATABASE_URL)
    return port


def fan_out(port: int, listener: Listener, revision: str,
            arguments: argparse.Namespace) -> dict:
    """The update, then the arrivals until all are in (plus the grace) or the timeout."""
    update_at = update_instance(port, revision)
    return await_arrivals(listener, update_at, arguments.subscriptions,
                          arguments.timeout or fanout_timeout(arguments.subscriptions),
                          arguments.grace)


def update_instance(port: int, revision: str) -> float:
    """The update to `revision`; when it was called (time.monotonic(), just before)."""
    update_at = time.monotonic()
    call_json(port, "PUT", UPDATE, instance_update_body(revision), SYSOP)
    print(f"  update answered in {time.monotonic() - update_at:.2f} s", flush=True)
    return update_at


def await_arrivals(listener: Listener, update_at: float, subscribers: int, timeout: float,
                   grace: float) -> dict:
    """The arrivals until all `subscribers` have the new result (then `grace` seconds more
    for late duplicates) or `timeout` from the update; the fan-out's figures."""
    if listener.wait_for(subscribers, update_at + timeout):
        time.sleep(grace)
    else:
        missing = subscribers - len(listener.reached)
        print(f"  timeout after {timeout:.0f} s: {missing} of {subscribers} "
              f"subscribers missing", flush=True)
    return fanout_figures(listener.classified(), update_at, subscribers)


def print_log_problems(logs: Path, topology: str) -> None:
    """Errors and tracebacks in the logs of the topology's processes."""
    names = [f"{topology}-gunicorn"] + (list(celery_commands(logs)) if topology == "production"
                                        else [])
    for name in names:
        path = logs / f"{name}.log"
        text = path.read_text() if path.exists() else ""
        print(f"  {name} log: {text.count('Traceback')} tracebacks, "
              f"{text.count('ERROR')} ERROR", flush=True)


# --- main -----------------------------------------------------------------------------------

def topologies(choice: str) -> list[str]:
    return ["defaults", "production"] if choice == "both" else [choice]


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscriptions", type=int, default=10_000,
                        help="subscribers, each a consumer of its own (default 10 000)")
    parser.add_argument("--topology", choices=("defaults", "production", "both"),
                        default="both")
    parser.add_argument("--clients", type=int, default=8, help="concurrent subscribe clients")
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds to wait for every arrival (default max(120, N / 20))")
    parser.add_argument("--grace", type=float, default=3.0,
                        help="seconds to keep counting duplicates after the last arrival")
    parser.add_argument("--logs", type=Path, default=None,
                        help="keep the server, worker and beat logs in this directory")
    arguments = parser.parse_args(argv)
    if arguments.subscriptions < 1 or arguments.clients < 1:
        parser.error("--subscriptions and --clients must be at least 1")
    return arguments


def raise_on_sigterm() -> None:
    """A terminated bench stops its processes too (the cleanup runs as for an error)."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))


def main() -> None:
    arguments = parse_arguments()
    raise_on_sigterm()
    run = uuid.uuid4().hex[:8]
    with contextlib.ExitStack() as stack:
        logs = arguments.logs or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        logs.mkdir(parents=True, exist_ok=True)
        results, lines, sample = {}, [], None
        for topology in topologies(arguments.topology):
            fanout, subscribe, found = measure_topology(topology, arguments, logs, run)
            sample = sample or found
            results[topology] = (fanout, subscribe)
            lines.append(topology_line(topology, fanout, subscribe))
            print(lines[-1], flush=True)
        raw = raw_broker_rate(arguments.subscriptions, sample or b"x" * 700,
                              fanout_timeout(arguments.subscriptions))
    print()
    for line in [*lines, raw_line(raw), *ratio_lines(results, raw)]:
        print(line)
    valid = (all(fanout_valid(fanout) and not subscribe["failures"]
                 for fanout, subscribe in results.values())
             and raw["received"] == raw["messages"])
    if not valid:
        sys.exit("invalid measurement: missing arrivals, odd messages or failed calls")


if __name__ == "__main__":
    main()
