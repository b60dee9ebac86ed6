"""bench/pull_http.py keeps working as the service changes: its wrk-output parser, its wrk Lua
scripts and its data, on fixed inputs (nothing is run or timed here)."""
import collections
import json
import math
import re

import pytest

from tests.bench_modules import load_bench

pull_http = load_bench("pull_http")

WRK_OUTPUT = """Running 15s test @ http://127.0.0.1:40123/serviceorchestration/orchestration/pull
  2 threads and 16 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   180.12ms   60.03ms   1.20s    80.00%
    Req/Sec    45.10     12.00    80.00     70.00%
  Latency Distribution
     50%  167.00ms
     75%  200.10ms
     90%  250.00ms
     99%    1.23s
  1353 requests in 15.02s, 2.10MB read
  Socket errors: connect 0, read 2, write 0, timeout 3
  Non-2xx or 3xx responses: 7
Requests/sec:     90.08
Transfer/sec:    143.20KB
"""


def test_wrk_output_is_parsed_into_figures() -> None:
    figures = pull_http.parse_wrk(WRK_OUTPUT)

    assert figures == {"requests_per_second": 90.08, "p50_ms": 167.0, "p99_ms": 1230.0,
                       "requests": 1353, "non_2xx": 7, "socket_errors": 5}


def test_wrk_output_without_errors_counts_none() -> None:
    clean = "\n".join(line for line in WRK_OUTPUT.splitlines()
                      if not line.strip().startswith(("Socket", "Non-2xx")))
    figures = pull_http.parse_wrk(clean.replace("99%    1.23s", "99%  950.00us"))

    assert (figures["non_2xx"], figures["socket_errors"]) == (0, 0)
    assert figures["p99_ms"] == pytest.approx(0.95)


def test_the_runs_latency_histograms_add_up_to_one_percentile() -> None:
    """The lines the Lua `done` hook writes (its own format string, as Lua's %d formats)
    add up across runs; the p99 is of all their requests."""
    line = re.search(r'string\.format\("([^"]+)\\n"', pull_http.HISTOGRAM_LUA).group(1)
    histogram = collections.Counter()
    pull_http.histogram_add(WRK_OUTPUT + "\n".join(line % pair for pair in
                                                    ((900, 98), (5000, 1))), histogram)
    pull_http.histogram_add(line % (900, 1) + "\n" + line % (40000, 1), histogram)

    assert histogram == {900: 99, 5000: 1, 40000: 1}
    assert pull_http.percentile_ms(histogram, 50) == 0.9
    assert pull_http.percentile_ms(histogram, 99) == 5.0  # the 100th of 101
    assert pull_http.percentile_ms(histogram, 100) == 40.0
    assert math.isnan(pull_http.percentile_ms(collections.Counter(), 99))

def test_pull_script_sends_a_random_consumers_identity_and_its_service() -> None:
    path, body = pull_http.SCENARIOS["pull"]
    script = pull_http.wrk_script(path, body, consumers=10_000, seed=3)

    assert 'headers["Authorization"] = "Bearer SYSTEM//Consumer" .. i' in script
    assert "math.random(0, 9999)" in script
    assert 'thread:set("seed", 3 + threads)' in script
    assert f'wrk.format("POST", "{path}", headers, ' in script
    template, modulo = re.search(r'string\.format\((".*"), i % (\d+)\)', script).groups()
    assert json.loads(json.loads(template) % (4242 % int(modulo))) == {
        "serviceRequirement": {"serviceDefinition": "pullService42"},
        "orchestrationFlags": {"MATCHMAKING": True}}


def test_echo_script_sends_no_body() -> None:
    script = pull_http.wrk_script(pull_http.ECHO, None, consumers=100)

    assert f'wrk.format("GET", "{pull_http.ECHO}", headers, nil)' in script


def test_each_consumer_has_ten_rules_for_one_service_over_catalog_instances() -> None:
    catalog = {f'{draft["systemName"]}|{draft["serviceDefinitionName"]}|{draft["version"]}'
               for start in range(0, pull_http.PROVIDERS * pull_http.DEFINITIONS, pull_http.BULK)
               for draft in pull_http.instance_drafts(start, pull_http.BULK)}
    rules = pull_http.consumer_rules(4242)

    assert len(catalog) == 10_000
    assert [rule["priority"] for rule in rules] == list(range(1, 11))
    assert {rule["consumer"] for rule in rules} == {"Consumer4242"}
    assert {rule["serviceInstanceId"].split("|")[1] for rule in rules} == {"pullService42"}
    assert len({rule["serviceInstanceId"] for rule in rules}) == 10
    assert {rule["serviceInstanceId"] for rule in rules} <= catalog


def test_the_flexible_load_has_one_rule_per_consumer_a_tenth_by_metadata() -> None:
    rules = [rule for consumer in range(1000) for rule in pull_http.flexible_rules(consumer)]
    assert len(rules) == 1000
    by_metadata = [rule for rule in rules if "serviceMetadataRequirements" in rule]
    assert len(by_metadata) == 100
    assert all("provider" not in rule for rule in by_metadata)
    assert pull_http.flexible_rules(4242) == [{
        "consumer": "Consumer4242", "serviceDefinition": "pullService42", "priority": 1,
        "provider": "Provider42"}]
    assert pull_http.flexible_results(4242) == 1
    # instances of pullService0 in zone 5000 % 7 == 2: Provider1, 8, ..., 99
    assert pull_http.flexible_results(5000) == 15


def test_the_flexible_goals_ask_for_0_4_of_echo() -> None:
    def run(rps: float, p99: float) -> dict:
        return {"requests_per_second": rps, "p99_ms": p99, "valid": True}

    lines = pull_http.goal_lines({"echo": run(1000, 50), "pull": run(450, 150),
                                  "full-list": run(350, 150)}, flexible=True)
    assert [line.rsplit("goal", 1)[1].split()[:2] for line in lines] == [
        [">=", "0.4"], [">=", "0.4"], ["<=", "4"], ["<=", "4"]]
    assert [line.endswith("NOT met") for line in lines] == [False, True, False, False]
    assert "0.45" in lines[0] and "0.35" in lines[1]


def test_goals_are_judged_and_runs_with_errors_are_invalid() -> None:
    def run(rps: float, p99: float, valid: bool = True) -> dict:
        return {"requests_per_second": rps, "p99_ms": p99, "valid": valid}

    lines = pull_http.goal_lines({"echo": run(1000, 50), "pull": run(600, 150),
                                  "full-list": run(300, 400, valid=False)})

    assert [line.split()[-1] for line in lines] == ["met", "(errors)", "met", "(errors)"]
    assert "0.60" in lines[0] and "0.30" in lines[1] and "3.00" in lines[2]
    assert "8.00" in lines[3]


def test_profile_counts_own_and_inclusive_samples() -> None:
    raw = ("main (a.py:1);pull (orchestration/pull/services.py:9);wait (psycopg/c.py:5) 6\n"
           "main (a.py:1);pull (orchestration/pull/services.py:9) 4\n")

    own, total, samples = pull_http.profile_counts(raw)

    assert samples == 10
    assert own["wait (psycopg/c.py:5)"] == 6 and own["pull (orchestration/pull/services.py:9)"] == 4
    assert total["main (a.py:1)"] == 10 and total["pull (orchestration/pull/services.py:9)"] == 10


def test_rounds_are_judged_on_each_figures_median() -> None:
    runs = [{"requests_per_second": rps, "p50_ms": p50, "p99_ms": p99, "valid": True}
            for rps, p50, p99 in ((900.0, 9.0, 40.0), (2000.0, 4.0, 12.0), (1800.0, 5.0, 30.0))]
    assert pull_http.median_figures(runs) == {"requests_per_second": 1800.0, "p50_ms": 5.0,
                                              "p99_ms": 30.0, "valid": True}
    runs[0]["valid"] = False
    assert not pull_http.median_figures(runs)["valid"]


def test_metrics_on_is_compared_with_metrics_off_per_scenario() -> None:
    def run(rps: float, p99: float, valid: bool = True) -> dict:
        return {"requests_per_second": rps, "p99_ms": p99, "valid": valid}

    off = {"echo": run(1000, 40), "pull": run(600, 50), "full-list": run(500, 60)}
    on = {"echo": run(1100, 40), "pull": run(540, 55), "full-list": run(500, 60, valid=False)}

    lines = pull_http.metrics_lines(off, on)

    assert [line.split()[4] for line in lines] == ["echo", "pull", "full-list"]
    assert "req/s  1.10" in lines[0] and "req/s  0.90" in lines[1] and "p99  1.10" in lines[1]
    assert lines[2].endswith("invalid (errors)") and not lines[1].endswith("(errors)")


against_java = load_bench("against_java")


def test_the_java_comparison_gives_each_consumer_ten_distinct_instances_of_its_service():
    providers = 100
    rules = against_java.rules_of(1234, providers)
    assert [rule["priority"] for rule in rules] == list(range(1, 11))
    ids = [rule["serviceInstanceId"] for rule in rules]
    assert len(set(ids)) == 10
    assert {against_java.instance_id(0, 1234 % providers).split("|")[1]} == \
        {instance.split("|")[1] for instance in ids}


def test_the_java_start_up_is_read_from_its_last_started_line(tmp_path):
    log = tmp_path / "java.log"
    log.write_text("Started A in 20.1 seconds (process running for 22.5)\n...\n"
                   "Started SimpleStoreServiceOrchestrationApplication in 11.7 seconds "
                   "(process running for 13.4)\n")
    assert against_java.java_log_startup(log) == 13.4
