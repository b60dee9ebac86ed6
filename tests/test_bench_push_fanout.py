"""bench/push_fanout.py keeps working as the service changes: its data, the classification of
notifications, the fan-out and subscribe arithmetic, its lines and the processes it would
start, on fixed inputs (nothing is run or timed here)."""
import json

import pytest

from tests.bench_modules import BENCH, load_bench

push_fanout = load_bench("push_fanout")
NEW, OLD = push_fanout.NEW, push_fanout.OLD


def _notification(receiver: str, revision: str) -> bytes:
    return json.dumps({"receiver": receiver, "sender": "SimpleStoreServiceOrchestration",
                       "payload": {"results": [{"serviceInstanceId": push_fanout.INSTANCE_ID,
                                                "metadata": {"benchRevision": revision}}],
                                   "warnings": []}}).encode()


def test_every_consumer_has_one_rule_to_the_shared_instance_in_bulks_of_1000() -> None:
    bulks = push_fanout.rule_bulks(2500)

    assert [len(bulk) for bulk in bulks] == [1000, 1000, 500]
    entries = [entry for bulk in bulks for entry in bulk]
    assert len({entry["consumer"] for entry in entries}) == 2500
    assert entries[1234] == {"consumer": "PushConsumer1234", "priority": 1,
                             "serviceInstanceId": "PushProvider|pushService|1.0.0"}


def test_the_update_keeps_the_instance_and_interface_and_changes_the_metadata() -> None:
    created = push_fanout.instance_create_body()["instances"][0]
    updated = push_fanout.instance_update_body("updated-abc")["instances"][0]

    assert "|".join((created["systemName"], created["serviceDefinitionName"],
                     created["version"])) == updated["instanceId"]
    assert created["interfaces"] == updated["interfaces"]
    assert created["interfaces"][0]["properties"]["accessAddresses"] == ["127.0.0.1"]
    assert created["metadata"] == {"benchRevision": "initial"}
    assert updated["metadata"] == {"benchRevision": "updated-abc"}


def test_each_subscriber_has_a_topic_of_its_own_and_subscribes_for_the_service() -> None:
    prefix = push_fanout.topic_prefix("run1-defaults")
    body = push_fanout.subscribe_body(f"{prefix}42")

    assert body == {"orchestrationRequest": {"serviceRequirement": {
        "serviceDefinition": "pushService"}},
        "notifyInterface": {"protocol": "MQTT",
                            "properties": {"topic": "bench/push-fanout/run1-defaults/42"}}}
    assert push_fanout.subscriber_index(f"{prefix}42", prefix) == 42
    assert push_fanout.subscriber_index(f"{prefix}42/x", prefix) is None
    assert push_fanout.subscriber_index("bench/push-fanout/other/42", prefix) is None


def test_client_threads_share_the_subscribers_without_overlap() -> None:
    slices = push_fanout.subscriber_slices(20, 8)

    assert len(slices) == 8
    assert sorted(index for part in slices for index in part) == list(range(20))
    assert len(push_fanout.subscriber_slices(3, 8)) == 3


def test_the_timeout_is_at_least_two_minutes_and_grows_with_the_subscribers() -> None:
    assert push_fanout.fanout_timeout(200) == 120
    assert push_fanout.fanout_timeout(10_000) == 500


@pytest.mark.parametrize(("payload", "kind"), [
    (_notification("PushConsumer7", "updated-1"), "new"),
    (_notification("PushConsumer7", "initial"), "old"),
    (_notification("PushConsumer8", "updated-1"), "misaddressed"),
    (b"not json", "unreadable"),
    (json.dumps({"receiver": "PushConsumer7", "payload": {"results": None}}).encode(),
     "unreadable"),
])
def test_a_notification_is_new_only_with_the_revision_for_its_consumer(payload, kind) -> None:
    assert push_fanout.message_kind(payload, "updated-1", "PushConsumer7") == kind


def test_milestones_count_fractions_of_all_subscribers_not_of_the_arrived() -> None:
    arrivals = [float(n) for n in range(1, 101)]

    assert push_fanout.milestones(arrivals, 100) == {0.5: 50.0, 0.9: 90.0, 0.99: 99.0,
                                                     1.0: 100.0}
    assert push_fanout.milestones(arrivals[:95], 100) == {0.5: 50.0, 0.9: 90.0, 0.99: None,
                                                          1.0: None}


def test_fanout_figures_time_first_arrivals_from_the_update_and_count_the_odd_ones() -> None:
    records = [(9.0, "t/0", OLD),  # an initial push, before the update
               (12.0, "t/0", NEW), (11.0, "t/1", NEW), (14.0, "t/1", NEW),  # a duplicate
               (13.0, "t/2", OLD), (13.5, "t/2", "misaddressed")]

    figures = push_fanout.fanout_figures(records, update_at=10.0, subscribers=4)

    assert figures["reached"] == 2 and figures["missing"] == 2
    assert (figures["first"], figures["last"]) == (1.0, 2.0)
    assert figures["arrivals_per_second"] == 1.0 and figures["steady_per_second"] == 1.0
    assert (figures["duplicates"], figures["stale"], figures["early"]) == (1, 1, 1)
    assert (figures["unreadable"], figures["misaddressed"]) == (0, 1)
    assert figures["milestones"] == {0.5: 2.0, 0.9: None, 0.99: None, 1.0: None}
    assert not push_fanout.fanout_valid(figures)


def test_a_complete_fanout_with_duplicates_only_is_valid() -> None:
    records = [(10.5, "t/0", NEW), (11.0, "t/1", NEW), (12.0, "t/1", NEW)]

    figures = push_fanout.fanout_figures(records, update_at=10.0, subscribers=2)

    assert figures["missing"] == 0 and figures["duplicates"] == 1
    assert figures["arrivals_per_second"] == 2.0 and figures["steady_per_second"] == 2.0
    assert push_fanout.fanout_valid(figures)


def test_subscribe_figures_rate_latencies_and_failures() -> None:
    outcomes = [(201, 0.010)] * 97 + [(200, 0.020), (500, 0.030), (0, 0.5)]

    figures = push_fanout.subscribe_figures(outcomes, seconds=0.25, clients=8)

    assert figures["calls"] == 100 and figures["calls_per_second"] == 400.0
    assert figures["p50_ms"] == pytest.approx(10.0) and figures["p99_ms"] == pytest.approx(30.0)
    assert figures["statuses"] == {201: 97, 200: 1, 500: 1, 0: 1}
    assert figures["failures"] == 2


def test_lines_show_the_figures_and_judge_the_subscribe_goal() -> None:
    fanout = push_fanout.fanout_figures([(10.5, "t/0", NEW), (12.0, "t/1", NEW)], 10.0, 2)
    subscribe = push_fanout.subscribe_figures([(201, 0.01)] * 10, seconds=0.02, clients=8)
    raw = {"messages": 2, "received": 2, "payload_bytes": 600, "seconds": 0.001,
           "messages_per_second": 2000.0}

    line = push_fanout.topology_line("defaults", fanout, subscribe)
    assert "fan-out 2/2 in 2.00 s" in line and "1.0 arrivals/s" in line
    assert "subscribe 500.0 calls/s" in line and "INVALID" not in line
    assert "2000.0 messages/s" in push_fanout.raw_line(raw)
    ratio, goal = push_fanout.ratio_lines({"defaults": (fanout, subscribe)}, raw)
    assert "0.0005" in ratio and ratio.endswith("met") and "NOT" not in ratio
    subscribe["echo_per_second"] = 1250.0
    ratio, _ = push_fanout.ratio_lines({"defaults": (fanout, subscribe)}, raw)
    assert "subscribe 500.0 calls/s (0.40 of echo's 1250.0 with the same clients)" in ratio
    assert goal.endswith("not judged (fewer than 10000 subscribers)")
    missing = push_fanout.fanout_figures([(10.5, "t/0", NEW)], 10.0, 2)
    assert "in never" in push_fanout.topology_line("defaults", missing, subscribe)
    assert push_fanout.topology_line("defaults", missing, subscribe).endswith("INVALID")


def test_the_fanout_goal_is_judged_per_topology_for_ten_thousand() -> None:
    arrivals = [(2.0 + n * 0.0008, f"t/{n}", NEW) for n in range(10_000)]  # the last at 10 s
    fast = [(1.0 + n * 0.0004, topic, kind) for n, (_, topic, kind) in enumerate(arrivals)]
    fanout = push_fanout.fanout_figures(fast, update_at=0.5, subscribers=10_000)  # 4.5 s
    assert push_fanout.fanout_goal_line("production", fanout).endswith(
        "goal <= 5 s for 10000 met")
    late = push_fanout.fanout_figures(arrivals, update_at=0.5, subscribers=10_000)  # 9.5 s
    assert push_fanout.fanout_goal_line("production", late).endswith("NOT met")
    assert push_fanout.fanout_goal_line("defaults", late).endswith("goal <= 10 s for 10000 met")
    incomplete = push_fanout.fanout_figures(arrivals[:-1], update_at=0.5, subscribers=10_000)
    assert push_fanout.fanout_goal_line("defaults", incomplete).endswith("NOT met")


def test_topologies_differ_in_the_broker_only() -> None:
    base = {"PORT": "4000", "CELERY_BROKER_URL": "redis://127.0.0.1:6379/0"}
    defaults = push_fanout.topology_environment("defaults", "postgres://x/db",
                                                "redis://127.0.0.1:6379/5", base)
    production = push_fanout.topology_environment("production", "postgres://x/db",
                                                  "redis://127.0.0.1:6379/5", base)

    assert defaults["CELERY_BROKER_URL"] == ""  # tasks in-process, whatever the shell has
    assert production["CELERY_BROKER_URL"] == "redis://127.0.0.1:6379/5"
    assert {key: value for key, value in defaults.items() if key != "CELERY_BROKER_URL"} == {
        key: value for key, value in production.items() if key != "CELERY_BROKER_URL"}
    assert defaults["MQTT_BROKER_URL"] == "mqtt://127.0.0.1:1883"
    assert push_fanout.topologies("both") == ["defaults", "production"]


def test_celery_processes_are_started_as_the_makefile_starts_them(tmp_path) -> None:
    commands = push_fanout.celery_commands(tmp_path / "schedule")
    makefile = (BENCH.parent / "Makefile").read_text()

    assert list(commands) == ["worker-main", "worker-http", "beat"]
    main, http, beat = (command[command.index("config") + 1:] for command in commands.values())
    assert main == ["worker", "--hostname", "main@%h", "--loglevel", "INFO",
                    "--queues", "serviceorchestration,serviceorchestration.mqtt"]
    assert http == ["worker", "--hostname", "http@%h", "--loglevel", "INFO", "--queues",
                    "serviceorchestration.http", "--pool", "threads", "--concurrency", "8"]
    assert beat == ["beat", "--loglevel", "INFO", "--schedule", str(tmp_path / "schedule")]
    assert "--hostname main@%h --loglevel INFO" in makefile
    assert "--pool threads --concurrency $(NOTIFY_HTTP_CONCURRENCY)" in makefile
    assert "NOTIFY_HTTP_CONCURRENCY ?= 8" in makefile
    assert "CELERY_TASK_DEFAULT_QUEUE ?= serviceorchestration" in makefile
    assert "beat --loglevel INFO" in makefile


def test_arguments_default_to_ten_thousand_subscribers_in_both_topologies() -> None:
    arguments = push_fanout.parse_arguments([])

    assert (arguments.subscriptions, arguments.topology, arguments.clients) == (
        10_000, "both", 8)
    assert arguments.timeout is None
    with pytest.raises(SystemExit):
        push_fanout.parse_arguments(["--subscriptions", "0"])
