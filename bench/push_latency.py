"""Change-to-subscriber latency: how long after a change is committed its subscribers have
the new result (the failover time of a consumer whose provider changed or went away).

    .venv/bin/python bench/push_latency.py                  # 100 subscribers, 20 changes, both
    .venv/bin/python bench/push_latency.py --changes 5 --topology production      # quick

The data, topologies, subscriptions and listener are bench/push_fanout.py's: one provider
instance, N consumers each with one rule to it and an MQTT subscription of its own topic.
Once nothing is queued, `--changes` updates of the instance's metadata follow one another,
each a new revision, `--gap` seconds (0.4 to 0.8, drawn at random: the periodic round every
2 s must not line up with them) after the previous one has reached every subscriber. The
latency of a subscriber is the first arrival of the change's revision on its topic, timed
from the change's commit: PostgreSQL's commit timestamp of the change's feed rows where the
server keeps them (`track_commit_timestamp = on`), otherwise the earliest of their
`written_at` (the writing statement's start, before the commit: conservative by the time
from that statement to the commit). Both are the database's clock, which on this one host is
the listener's. The latency from just before the update call (the whole call included) is
printed beside it, with that call's answer time.

Figures: p50, p99 and max over every (change, subscriber), beside the goals (p50 <= 150 ms,
p99 <= 500 ms) and a baseline measured in the same run on the same broker: the raw broker's
latency for the same messages, N QoS-1 publishes by one paho connection to one subscriber
per round, timed from just before the first publish. Missing, duplicate, stale or odd
arrivals make the run invalid (exit status 1).
"""
import argparse
import contextlib
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import psycopg  # noqa: E402
from push_fanout import (  # noqa: E402
    DATABASE_URL,
    MQTT_HOST,
    MQTT_PORT,
    NEW,
    OLD,
    SYSOP,
    UPDATE,
    Listener,
    RawListener,
    call_json,
    instance_update_body,
    message_kind,
    mqtt_client,
    nearest_rank,
    print_log_problems,
    revision_mark,
    subscribe_all,
    topic_prefix,
    topic_receiver,
    topologies,
    topology_loaded,
    wait_until_quiet,
)

P50_GOAL_MS, P99_GOAL_MS = 150.0, 500.0
FEED = "orchestration_snapshotchange"  # the change feed the database's triggers write
ROUND_TIMEOUT = 10.0  # seconds for one change to reach every subscriber


class RevisionListener(Listener):
    """A Listener whose revision moves on with each change: `start(revision)` begins a
    round; `firsts` holds each topic's first arrival of the round's revision. An arrival of
    an older revision after the new one reached the topic is stale."""

    def __init__(self, prefix: str) -> None:
        super().__init__(prefix, revision="")
        self.firsts: dict[str, float] = {}
        self.stale = self.duplicates = self.odd = 0

    def start(self, revision: str) -> None:
        self.revision, self.mark = revision, revision_mark(revision)
        self.firsts, self.reached = {}, set()

    def _on_message(self, at: float, topic: str, payload: bytes) -> None:
        # A hundred messages a change: each is read as it comes, against the round's revision.
        self.arrivals.append((at, topic, payload))
        kind = message_kind(payload, self.revision, topic_receiver(topic, self.prefix))
        if kind == NEW and topic not in self.firsts:
            self.firsts[topic] = at
            self.reached.add(topic)
        elif kind == NEW:
            self.duplicates += 1
        elif kind == OLD and topic in self.firsts:
            self.stale += 1
        elif kind != OLD:
            self.odd += 1


def percentile_ms(values: list[float], fraction: float) -> float | None:
    found = nearest_rank(sorted(values), fraction)
    return None if found is None else found * 1000


def feed_position(connection) -> int:
    """The change feed's newest id."""
    return connection.execute(f"SELECT COALESCE(MAX(id), 0) FROM {FEED}").fetchone()[0]


def commit_instant(connection, after_id: int) -> tuple[float, str]:
    """When the change after feed row `after_id` was committed (epoch seconds), and how that
    is known: the commit timestamp of its feed rows, or their earliest `written_at` (before
    the commit) where the server keeps no commit timestamps."""
    tracked = connection.execute("SHOW track_commit_timestamp").fetchone()[0] == "on"
    instant = ("pg_xact_commit_timestamp(xmin)" if tracked else "written_at")
    [(epoch,)] = connection.execute(
        f"SELECT EXTRACT(EPOCH FROM MIN({instant}))::float FROM {FEED} WHERE id > %s",
        [after_id]).fetchall()
    if epoch is None:
        sys.exit("the update call wrote no change into the feed")
    return epoch, "commit timestamp" if tracked else "written_at, before the commit"


def measure_topology(topology: str, arguments: argparse.Namespace, logs: Path,
                     run: str) -> dict:
    print(f"{topology}: {arguments.subscriptions} subscribers, {arguments.changes} changes",
          flush=True)
    prefix = topic_prefix(f"{run}-latency-{topology}")
    latencies, from_calls, update_calls, missing, known = [], [], [], 0, ""
    with contextlib.ExitStack() as stack:
        port = topology_loaded(topology, arguments.subscriptions, logs, stack)
        database = stack.enter_context(psycopg.connect(DATABASE_URL, autocommit=True))
        with RevisionListener(prefix) as listener:
            subscribe_all(port, arguments.subscriptions, arguments.clients, prefix)
            wait_until_quiet(DATABASE_URL)
            for change in range(arguments.changes):
                revision = f"{run}-{topology}-{change}"
                before = feed_position(database)
                listener.start(revision)
                started = time.monotonic()
                # The listener's clock (monotonic) against the database's (the epoch).
                epoch_offset = time.time() - started
                call_json(port, "PUT", UPDATE, instance_update_body(revision), SYSOP)
                update_calls.append(time.monotonic() - started)
                listener.wait_for(arguments.subscriptions, started + ROUND_TIMEOUT)
                committed, known = commit_instant(database, before)
                latencies += [at + epoch_offset - committed
                              for at in listener.firsts.values()]
                from_calls += [at - started for at in listener.firsts.values()]
                missing += arguments.subscriptions - len(listener.firsts)
                time.sleep(random.uniform(*arguments.gap))
            time.sleep(1.0)  # late duplicates
            figures = {"latencies": latencies, "from_calls": from_calls, "known": known,
                       "missing": missing, "update_ms": percentile_ms(update_calls, 0.5),
                       "stale": listener.stale, "duplicates": listener.duplicates,
                       "odd": listener.odd}
    print_log_problems(logs, topology)
    return figures


def raw_latency(subscribers: int, rounds: int, payload: bytes) -> list[float]:
    """Per round, `subscribers` QoS-1 publishes by one connection to one subscriber: each
    message's arrival after the round's start."""
    prefix = topic_prefix(f"raw-latency-{uuid.uuid4().hex[:8]}")
    latencies = []
    with RawListener(prefix, revision="") as listener:
        publisher = mqtt_client("latency-publisher")
        publisher.connect(MQTT_HOST, MQTT_PORT, keepalive=60)
        publisher.loop_start()
        try:
            for _ in range(rounds):
                listener.arrivals.clear()
                started = time.monotonic()
                for number in range(subscribers):
                    publisher.publish(f"{prefix}{number}", payload, qos=1)
                deadline = started + ROUND_TIMEOUT
                while len(listener.arrivals) < subscribers and time.monotonic() < deadline:
                    time.sleep(0.001)
                latencies += [at - started for at, _, _ in listener.arrivals]
                time.sleep(0.05)
        finally:
            publisher.disconnect()
            publisher.loop_stop()
    return latencies


def figures_line(name: str, latencies: list[float]) -> str:
    p50, p99 = percentile_ms(latencies, 0.5), percentile_ms(latencies, 0.99)
    worst = max(latencies) * 1000 if latencies else None
    shown = [f"{value:.0f} ms" if value is not None else "-" for value in (p50, p99, worst)]
    return f"p50 {shown[0]}  p99 {shown[1]}  max {shown[2]}  ({len(latencies)} arrivals)"


def goal_line(topology: str, figures: dict) -> str:
    p50 = percentile_ms(figures["latencies"], 0.5)
    p99 = percentile_ms(figures["latencies"], 0.99)
    valid = not (figures["missing"] or figures["stale"] or figures["duplicates"]
                 or figures["odd"])
    met = valid and p50 is not None and p50 <= P50_GOAL_MS and p99 <= P99_GOAL_MS
    shown = figures_line(topology, figures["latencies"])
    from_calls = figures_line(topology, figures["from_calls"])
    return (f"{topology:<10}  change commit -> arrival {shown}"
            f"   goal p50 <= {P50_GOAL_MS:.0f} ms, p99 <= {P99_GOAL_MS:.0f} ms "
            f"{'met' if met else 'NOT met'}   (commit: {figures['known']})\n"
            f"{'':<10}  update call -> arrival {from_calls}   (update call p50 "
            f"{figures['update_ms']:.0f} ms; "
            f"missing {figures['missing']}, duplicates {figures['duplicates']}, "
            f"stale {figures['stale']}, odd {figures['odd']})")


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscriptions", type=int, default=100)
    parser.add_argument("--changes", type=int, default=20)
    parser.add_argument("--topology", choices=("defaults", "production", "both"),
                        default="both")
    parser.add_argument("--clients", type=int, default=8, help="concurrent subscribe clients")
    parser.add_argument("--gap", type=float, nargs=2, default=(0.4, 0.8),
                        help="seconds between a change's last arrival and the next change")
    parser.add_argument("--logs", type=Path, default=None)
    arguments = parser.parse_args(argv)
    if arguments.subscriptions < 1 or arguments.changes < 1:
        parser.error("--subscriptions and --changes must be at least 1")
    return arguments


def main() -> None:
    arguments = parse_arguments()
    run = uuid.uuid4().hex[:8]
    with contextlib.ExitStack() as stack:
        logs = arguments.logs or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        logs.mkdir(parents=True, exist_ok=True)
        results = {topology: measure_topology(topology, arguments, logs, run)
                   for topology in topologies(arguments.topology)}
    raw = raw_latency(arguments.subscriptions, arguments.changes, b"x" * 600)
    print()
    for topology, figures in results.items():
        print(goal_line(topology, figures))
    print(f"{'raw broker':<10}  publish -> arrival {figures_line('raw', raw)}   "
          "(the baseline: the same number of QoS-1 messages on the same broker)")
    if any(f["missing"] or f["stale"] or f["duplicates"] or f["odd"]
           for f in results.values()):
        sys.exit("invalid measurement: missing, duplicate, stale or odd arrivals")


if __name__ == "__main__":
    main()
