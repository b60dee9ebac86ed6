"""bench/push_latency.py and the new figures of bench/pull_http.py keep working: their pure
helpers on fixed inputs (nothing is run or timed here)."""
from tests.bench_modules import load_bench

push_latency = load_bench("push_latency")
pull_http = load_bench("pull_http")


def figures(latencies: list[float], **odd: int) -> dict:
    return {"latencies": latencies, "update_ms": 30.0, "known": "commit timestamp",
            "from_calls": [latency + 0.03 for latency in latencies],
            **{"missing": 0, "stale": 0, "duplicates": 0, "odd": 0, **odd}}


def test_the_latency_goal_is_judged_on_p50_and_p99() -> None:
    met = push_latency.goal_line("production", figures([0.1] * 99 + [0.4]))
    assert "p50 100 ms" in met and "p99 100 ms" in met and met.count("NOT met") == 0
    # Judged from the commit; the time from the update call is shown beside it.
    assert "update call -> arrival p50 130 ms" in met and "(commit: commit timestamp)" in met
    slow = push_latency.goal_line("production", figures([0.2] * 100))
    assert "NOT met" in slow


def test_a_latency_run_with_odd_arrivals_is_not_met() -> None:
    assert "NOT met" in push_latency.goal_line("defaults", figures([0.05] * 10, stale=1))


def test_memory_settles_when_no_process_moves_by_more_than_one_percent() -> None:
    steady = [{1: 100_000, 2: 200_000}] * 5
    assert pull_http.memory_settled(steady)
    assert not pull_http.memory_settled(steady[:4])
    moved = steady[:4] + [{1: 102_000, 2: 200_000}]
    assert not pull_http.memory_settled(moved)
    assert not pull_http.memory_settled(steady[:4] + [{1: 100_000}])  # a process went


def test_the_large_fanout_goal_applies_from_100000_subscribers() -> None:
    push_fanout = load_bench("push_fanout")
    arrivals = [(1.0 + n * 0.0005, f"t/{n}", "new") for n in range(100_000)]  # the last at 51 s
    fanout = push_fanout.fanout_figures(arrivals, update_at=0.0, subscribers=100_000)
    assert push_fanout.fanout_goal_line("production", fanout).endswith(
        "goal <= 60 s for 100000 met")
    # The defaults topology keeps the 10 000 goal: 51 s is far beyond it.
    assert push_fanout.fanout_goal_line("defaults", fanout).endswith(
        "goal <= 10 s for 10000 NOT met")
