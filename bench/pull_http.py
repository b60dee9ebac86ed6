"""Pull at scale over HTTP (issue 14): the server started as `make run` starts it, on a fresh
database, loaded through the API with a catalog and rules, then wrk against echo and pull from
random consumers; prints req/s, p50 and p99 of each and the ratios against their goals.

    make bench      # or: .venv/bin/python bench/pull_http.py [--seconds 15] [--rounds 3]
    .venv/bin/python bench/pull_http.py --scale-check   # single-connection pull, 1k vs 1M rules
                                                        # (each side as a share of echo)
    .venv/bin/python bench/pull_http.py --sqlite        # make run's embedded SQLite, 1k rules
    .venv/bin/python bench/pull_http.py --bulk          # pull p99 while 900k rules are imported
                                                        # (against steady; runs against rest)
    .venv/bin/python bench/pull_http.py --flexible      # the flexible store, 10k flexible rules

Data: INSTANCES catalog instances (PROVIDERS providers × DEFINITIONS service definitions, one
generic_http interface on 127.0.0.1, policy NONE: no tokens, and nothing ever connects to
them) and 10 rules per consumer, all for the consumer's one service definition
(`Consumer<i>` → `pullService<i % DEFINITIONS>`, priorities 1..10), so a pull without
MATCHMAKING answers 10 results and one with it answers 1. Default: 10 000 consumers, 100 000
rules. Everything is loaded with bulk creates of MAX_BULK_SIZE (1000) entries.
`--flexible` (issue 33): the server as the flexible store (ORCHESTRATION_STRATEGY), the same
catalog, and one flexible rule per consumer (default 10 000 rules): Consumer<i> gets
pullService<i % DEFINITIONS> of one named provider, except every tenth consumer, whose rule
selects by metadata (any provider; instances whose `region` is `zone<i % 7>`: 14 or 15 of
them).

Each wrk run (16 connections, 2 threads) picks a random consumer per request and sends its
identity (`Authorization: Bearer SYSTEM//Consumer<i>`). The throughput runs are interleaved:
3 rounds of echo, pull and full list, 5 s each, judged on each scenario's median. A run with
non-2xx answers or socket errors is reported as invalid. Needs wrk and PostgreSQL (BENCH_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/serviceorchestration_pull_bench, dropped and created again
on each run). `--profile PY_SPY` records one gunicorn worker with that py-spy executable
during the MATCHMAKING run and prints its hottest frames. `--metrics` also starts a server with
METRICS_ENABLED=true on the same data and interleaves its rounds with the first's (metrics
off): each is judged against its own echo, and pull with metrics on against pull without.
Figures: docs/performance.md.
"""
import argparse
import collections
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (  # noqa: E402
    ECHO,
    FLEXIBLE_RULES,
    INSTANCES,
    PULL,
    ROOT,
    RULES,
    SYSOP,
    create_database,
    parse_wrk,
    post_json,
    require_wrk,
    run_wrk,
    running_server,
    server_environment,
)

DATABASE_URL = os.environ.get(
    "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/serviceorchestration_pull_bench")
PROVIDERS, DEFINITIONS = 100, 100
RULES_PER_CONSUMER = 10
BULK = 1000
SEED = 14
SERVICE_PACKAGES = {"config", "general", "identity", "notifications", "orchestration",
                    "serviceregistry", "store", "subscriptions"}
# name: (path, pull body or None for echo); %d in a body is the consumer's service definition.
SCENARIOS = {
    "echo": (ECHO, None),
    "pull": (PULL, {"serviceRequirement": {"serviceDefinition": "pullService%d"},
                    "orchestrationFlags": {"MATCHMAKING": True}}),
    "full-list": (PULL, {"serviceRequirement": {"serviceDefinition": "pullService%d"}}),
}
# Labels of the two servers of --metrics, printed before their figures.
METRICS_OFF, METRICS_ON = "metrics off ", "metrics on  "
METRICS_PREFIX = "serviceorchestration"
# (label, numerator figure, denominator figure, goal test, goal text)
GOALS = (
    ("pull / echo req/s", ("pull", "requests_per_second"), ("echo", "requests_per_second"),
     lambda ratio: ratio >= 0.5, ">= 0.5"),
    ("full-list / echo req/s", ("full-list", "requests_per_second"),
     ("echo", "requests_per_second"), lambda ratio: ratio >= 0.4, ">= 0.4"),
    ("pull p99 / echo p99", ("pull", "p99_ms"), ("echo", "p99_ms"),
     lambda ratio: ratio <= 4, "<= 4"),
    ("full-list p99 / echo p99", ("full-list", "p99_ms"), ("echo", "p99_ms"),
     lambda ratio: ratio <= 4, "<= 4"),
)

# The flexible store's (issue 33): pull and full list at least 0.4 of echo, p99 at most 4 times.
FLEXIBLE_GOALS = tuple((label, top, bottom, lambda ratio: ratio >= 0.4, ">= 0.4")
                       if "req/s" in label else (label, top, bottom, met, goal)
                       for label, top, bottom, met, goal in GOALS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=15,
                        help="wrk time per scenario (split into --rounds runs)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="interleaved rounds of echo, pull and full list")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--consumers", type=int, default=10_000,
                        help="consumers with 10 rules each (default 10 000: 100 000 rules)")
    parser.add_argument("--scale-check", action="store_true",
                        help="single-connection pull p50 at 1k rules and at --large-rules")
    parser.add_argument("--large-rules", type=int, default=1_000_000)
    parser.add_argument("--bulk", action="store_true",
                        help="single-connection pull p99 while --bulk-rules rules are imported "
                        "in one transaction, and until every web process has caught up")
    parser.add_argument("--bulk-rules", type=int, default=900_000)
    parser.add_argument("--sqlite", action="store_true",
                        help="make run's embedded SQLite at 1k rules; no 500s, no locked database")
    parser.add_argument("--profile", metavar="PY_SPY", help="py-spy executable")
    parser.add_argument("--metrics", action="store_true",
                        help="also measure a server with METRICS_ENABLED=true, interleaved")
    parser.add_argument("--flexible", action="store_true",
                        help="the flexible store: one flexible rule per consumer, a tenth "
                        "selecting by metadata")
    arguments = parser.parse_args()
    require_wrk()
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        if arguments.sqlite:
            database_url = f"sqlite:///{scratch / 'db.sqlite3'}"
            consumers = 100
        else:
            database_url = DATABASE_URL
            create_database(database_url, fresh=True)
            consumers = 100 if arguments.scale_check or arguments.bulk else arguments.consumers
        # LOG_LEVEL=INFO: the snapshot loads are logged.
        strategy = {"ORCHESTRATION_STRATEGY": "flexible-store"} if arguments.flexible else {}
        environment = server_environment(database_url, LOG_LEVEL="INFO", METRICS_ENABLED="false",
                                         **strategy)
        log = scratch / "gunicorn.log"
        with contextlib.ExitStack() as servers_running:
            server = servers_running.enter_context(running_server(environment, log))
            port = int(environment["PORT"])
            load(port, consumers, flexible=arguments.flexible)
            if arguments.scale_check:
                valid = scale_check(port, server.pid, scratch, arguments)
            elif arguments.bulk:
                valid = bulk_check(port, server.pid, scratch, environment, log, arguments)
            else:
                servers = {"": (port, server.pid)}
                if arguments.metrics:
                    # Both compared servers start on the loaded data (the loading one grew
                    # its snapshot change by change, and its heap differs).
                    servers_running.close()
                    servers = {
                        METRICS_OFF: started_server(database_url, scratch, servers_running,
                                                    METRICS_ENABLED="false"),
                        METRICS_ON: started_server(database_url, scratch, servers_running,
                                                   METRICS_ENABLED="true",
                                                   PROMETHEUS_MULTIPROC_DIR=str(
                                                       scratch / "metrics"))}
                valid = throughput(servers, scratch, consumers, arguments)
        server_log = "".join(path.read_text() for path in scratch.glob("gunicorn*.log"))
        locked = server_log.count("database is locked")
        print(f"server log: {locked} 'database is locked'")
        for line in server_log.splitlines():
            if "Pull snapshot" in line:  # loads of the workers' snapshots (when, how long)
                print(f"server log: {line}")
        if locked or not valid:
            sys.exit("invalid measurement: errors during the runs")


def load(port: int, consumers: int, first_consumer: int = 0, flexible: bool = False) -> None:
    """The catalog (unless first_consumer > 0: already there) and the rules (flexible ones
    with `flexible`) of consumers [first_consumer, consumers), through the API in bulks;
    prints how long it took."""
    started = time.monotonic()
    if not first_consumer:
        for start in range(0, PROVIDERS * DEFINITIONS, BULK):
            post_json(port, INSTANCES, {"instances": instance_drafts(start, BULK)}, SYSOP)
        print(f"loaded {PROVIDERS * DEFINITIONS} instances in {time.monotonic() - started:.1f} s")
    started = time.monotonic()
    rules_of, path = ((flexible_rules, FLEXIBLE_RULES) if flexible
                      else (consumer_rules, RULES))
    entries = (rule for consumer in range(first_consumer, consumers)
               for rule in rules_of(consumer))
    count = 0
    while batch := [rule for _, rule in zip(range(BULK), entries)]:
        post_json(port, path, {"entries": batch}, SYSOP)
        count += len(batch)
        if count % 100_000 == 0:
            print(f"  {count} rules, {time.monotonic() - started:.0f} s", flush=True)
    print(f"loaded {count} rules ({consumers - first_consumer} consumers) in "
          f"{time.monotonic() - started:.1f} s", flush=True)


def instance_drafts(start: int, count: int) -> list[dict]:
    """Instances start..start+count-1: instance n is Provider<n // DEFINITIONS> offering
    pullService<n % DEFINITIONS>."""
    return [{"systemName": f"Provider{n // DEFINITIONS}",
             "serviceDefinitionName": f"pullService{n % DEFINITIONS}", "version": "1.0.0",
             "metadata": {"region": f"zone{n % 7}", "rank": n % 10},
             "interfaces": [{"templateName": "generic_http", "protocol": "http",
                             "policy": "NONE",
                             "properties": {"accessAddresses": ["127.0.0.1"],
                                            "accessPort": 20000 + n // DEFINITIONS,
                                            "basePath": f"/service{n % DEFINITIONS}",
                                            "operations": {"query": {"path": "/query",
                                                                     "method": "GET"}}}}]}
            for n in range(start, min(start + count, PROVIDERS * DEFINITIONS))]


def consumer_rules(consumer: int) -> list[dict]:
    """Consumer<i>'s 10 rules, all for pullService<i % DEFINITIONS>, over 10 providers."""
    definition = consumer % DEFINITIONS
    return [{"consumer": f"Consumer{consumer}", "priority": priority,
             "serviceInstanceId": f"Provider{(consumer // DEFINITIONS + priority) % PROVIDERS}"
                                  f"|pullService{definition}|1.0.0"}
            for priority in range(1, RULES_PER_CONSUMER + 1)]


def flexible_rules(consumer: int) -> list[dict]:
    """Consumer<i>'s flexible rule for pullService<i % DEFINITIONS>: one named provider's
    instance, or for every tenth consumer the instances whose region is zone<i % 7>."""
    rule = {"consumer": f"Consumer{consumer}",
            "serviceDefinition": f"pullService{consumer % DEFINITIONS}", "priority": 1}
    if consumer % 10 == 0:
        return [{**rule, "providerMetadataRequirements": [{}],
                 "serviceMetadataRequirements": [{"region": f"zone{consumer % 7}"}]}]
    return [{**rule, "provider": f"Provider{(consumer // DEFINITIONS) % PROVIDERS}"}]


def flexible_results(consumer: int) -> int:
    """How many instances the consumer's flexible rule selects."""
    if consumer % 10:
        return 1
    return sum(1 for n in range(PROVIDERS * DEFINITIONS)
               if n % DEFINITIONS == consumer % DEFINITIONS and n % 7 == consumer % 7)


def wrk_script(path: str, body: dict | None, consumers: int, seed: int = SEED) -> str:
    """A wrk Lua script: each request as a random one of `consumers` consumers (its identity
    header and, for pull, `body` with the consumer's service definition)."""
    if body is None:
        method, lua_body = "GET", "nil"
    else:
        template = json.dumps(body, separators=(",", ":"))
        method, lua_body = "POST", f"string.format({json.dumps(template)}, i % {DEFINITIONS})"
    return f"""-- generated by bench/pull_http.py
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("seed", {seed} + threads)
end
function init(args)
  math.randomseed(seed)
end
function request()
  local i = math.random(0, {consumers - 1})
  local headers = {{}}
  headers["Authorization"] = "Bearer SYSTEM//Consumer" .. i
  headers["Content-Type"] = "application/json"
  return wrk.format("{method}", "{path}", headers, {lua_body})
end
"""


def check_answers(port: int, consumers: int, flexible: bool = False) -> None:
    """One pull of each kind answers what the data says (so wrk measures the intended work)."""
    consumer = consumers // 2
    full = RULES_PER_CONSUMER if not flexible else flexible_results(consumer)
    for name, expected in (("pull", 1), ("full-list", full)):
        body = json.loads(json.dumps(SCENARIOS[name][1]) % (consumer % DEFINITIONS))
        identity = {"Authorization": f"Bearer SYSTEM//Consumer{consumer}"}
        answer = post_json(port, PULL, body, identity)
        if len(answer["results"]) != expected or "interfaces" not in answer["results"][0]:
            sys.exit(f"{name}: expected {expected} catalog results, got {answer}")


def measure(port: int, scratch: Path, name: str, consumers: int, seconds: int,
            connections: int, label: str = "",
            histogram: collections.Counter | None = None) -> dict:
    """One wrk run, printed; its latencies are added to `histogram` when given."""
    path, body = SCENARIOS[name]
    script = scratch / f"{name}.lua"
    script.write_text(wrk_script(path, body, consumers)
                      + (HISTOGRAM_LUA if histogram is not None else ""))
    output = run_wrk(port, path, script=script, seconds=seconds, connections=connections)
    if histogram is not None:
        histogram_add(output, histogram)
    figures = parse_wrk(output)
    valid = not figures["non_2xx"] and not figures["socket_errors"]
    print(f"{label}{name:<10} {figures['requests_per_second']:8.1f} req/s   "
          f"p50 {figures['p50_ms']:8.2f} ms   p99 {figures['p99_ms']:8.2f} ms   "
          f"requests {figures['requests']}   non-2xx {figures['non_2xx']}   "
          f"socket errors {figures['socket_errors']}"
          f"{'' if valid else '   INVALID (errors)'}", flush=True)
    figures["valid"] = valid
    return figures


def started_server(database_url: str, scratch: Path, servers_running: contextlib.ExitStack,
                   **settings: str) -> tuple[int, int]:
    """Another server on the database with these settings, up until `servers_running`
    closes; its port and master pid."""
    environment = server_environment(database_url, LOG_LEVEL="INFO", **settings)
    server = servers_running.enter_context(
        running_server(environment, scratch / f"gunicorn-{environment['PORT']}.log"))
    return int(environment["PORT"]), server.pid


def throughput(servers: dict[str, tuple[int, int]], scratch: Path, consumers: int,
               arguments: argparse.Namespace) -> bool:
    """ROUNDS rounds of echo, pull and full list (on each server in turn, label → port and
    gunicorn master; the servers alternate at going first), each run seconds / ROUNDS long:
    these shared machines slow down for seconds at a time, and interleaving puts each scenario
    in every such period alike. Per scenario the median of its rounds is judged."""
    for port, _ in servers.values():
        check_answers(port, consumers, flexible=arguments.flexible)
    seconds = max(1, arguments.seconds // arguments.rounds)
    print(f"wrk: {arguments.connections} connections, {arguments.rounds} rounds of {seconds} s "
          f"per scenario, {consumers} random consumers, "
          f"WEB_CONCURRENCY={os.environ.get('WEB_CONCURRENCY', 'default')} "
          f"WEB_THREADS={os.environ.get('WEB_THREADS', 'default')}")
    rounds = {label: {name: [] for name in SCENARIOS} for label in servers}
    for round_number in range(arguments.rounds):
        order = list(servers.items())
        if round_number % 2:  # the servers take turns at going first
            order.reverse()
        for label, (port, master) in order:
            for name in SCENARIOS:
                profiler = None
                if name == "pull" and arguments.profile and round_number == 0:
                    profiler = start_profile(arguments.profile, master,
                                             scratch / "profile.txt", seconds)
                rounds[label][name].append(measure(port, scratch, name, consumers, seconds,
                                                   arguments.connections, label))
                if profiler:
                    profiler.wait()
                    print_profile(scratch / "profile.txt")
    results = {label: {name: median_figures(figures) for name, figures in runs.items()}
               for label, runs in rounds.items()}
    for label, scenarios in results.items():
        for name, figures in scenarios.items():
            print(f"median {label}{name:<10} {figures['requests_per_second']:8.1f} req/s   "
                  f"p50 {figures['p50_ms']:8.2f} ms   p99 {figures['p99_ms']:8.2f} ms")
        for line in goal_lines(scenarios, flexible=arguments.flexible):
            print(f"{label}{line}")
    if METRICS_ON in results:
        for line in metrics_lines(results[METRICS_OFF], results[METRICS_ON]):
            print(line)
        print(counted_pulls(servers[METRICS_ON][0], sum(
            run["requests"] for name in ("pull", "full-list")
            for run in rounds[METRICS_ON][name])))
    return all(figures["valid"] for scenarios in results.values()
               for figures in scenarios.values())


def metrics_lines(off: dict, on: dict) -> list[str]:
    """Each scenario with metrics on against off: req/s and p99 ratios."""
    return [f"metrics on / off {name:<10} req/s "
            f"{on[name]['requests_per_second'] / off[name]['requests_per_second']:5.2f}   "
            f"p99 {on[name]['p99_ms'] / off[name]['p99_ms']:5.2f}"
            f"{'' if on[name]['valid'] and off[name]['valid'] else '   invalid (errors)'}"
            for name in SCENARIOS]


def counted_pulls(port: int, sent: int) -> str:
    """What the metrics counted of the pulls wrk sent (plus check_answers' two)."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as answer:
        families = text_string_to_metric_families(answer.read().decode())
    counted = sum(sample.value for family in families for sample in family.samples
                  if sample.name == f"{METRICS_PREFIX}_requests_total"
                  and sample.labels == {"route": PULL, "status": "200"})
    return f"metrics: {counted:.0f} pulls counted, {sent + 2} sent"


def median_figures(runs: list[dict]) -> dict:
    """Each figure's median over the runs (valid only when every run was)."""
    figures = {field: statistics.median(run[field] for run in runs)
               for field in ("requests_per_second", "p50_ms", "p99_ms")}
    figures["valid"] = all(run["valid"] for run in runs)
    return figures


def goal_lines(results: dict, flexible: bool = False) -> list[str]:
    lines = []
    for label, (top, top_field), (bottom, bottom_field), met, goal in (
            FLEXIBLE_GOALS if flexible else GOALS):
        ratio = results[top][top_field] / results[bottom][bottom_field]
        valid = results[top]["valid"] and results[bottom]["valid"]
        verdict = ("met" if met(ratio) else "NOT met") if valid else "invalid (errors)"
        lines.append(f"{label:<24} {ratio:6.2f}   goal {goal:<6} {verdict}")
    return lines


def scale_check(port: int, master: int, scratch: Path, arguments: argparse.Namespace) -> bool:
    """Single-connection MATCHMAKING pull p50 with 1k rules, then with --large-rules, each
    as a share of echo's p50 measured next to it (this machine's speed drifts over the
    minutes the large load takes); and the resident memory of each web process at both."""
    check_answers(port, 100)
    small = relative_p50(port, scratch, 100, arguments)
    small_memory = settled_memory(master)
    large_consumers = arguments.large_rules // RULES_PER_CONSUMER
    load(port, large_consumers, first_consumer=100)
    check_answers(port, large_consumers)
    large = relative_p50(port, scratch, large_consumers, arguments)
    print_memory(small_memory, settled_memory(master), arguments.large_rules - 1000)
    valid = small["valid"] and large["valid"]
    ratio = large["share"] / small["share"]
    verdict = ("met" if ratio <= 1.1 else "NOT met") if valid else "invalid (errors)"
    print(f"pull p50 {arguments.large_rules} / 1000 rules {ratio:6.2f}   goal <= 1.1   {verdict}"
          f"   (pull p50 / echo p50: {small['share']:.2f} at 1000, {large['share']:.2f} at "
          f"{arguments.large_rules}; medians of {arguments.rounds} rounds)")
    return valid


# Issue 34, goal 3: pull p99 during a bulk import and until caught up, against steady p99.
BULK_GOAL = 3.0
BULK_WINDOW_SECONDS = 2  # one wrk run: the p99 of each is printed


def bulk_check(port: int, master: int, scratch: Path, environment: dict[str, str],
               log: Path, arguments: argparse.Namespace) -> bool:
    """Single-connection MATCHMAKING pull (100 consumers of 1000 rules) for --seconds:
    the steady p99 (and echo's, as this machine's baseline); then `import_rules` of
    --bulk-rules rules (10 a consumer, one transaction, as an operator's import) while
    single-connection pulls go on in BULK_WINDOW_SECONDS runs, until the import has ended
    and every web process has caught up: each has logged that it loaded everything again or
    read the imported consumers' rules again, and no process's memory has moved by more than
    1 % over five runs. Then as many runs at rest, as the control.

    The goal: the p99 of all the pulls of the runs during the bulk change (their latency
    histograms added up) against BULK_GOAL × the steady p99, and no run's p99 above
    BULK_GOAL × the worst run's at rest. A run's p99 is the 5th-slowest of about 500 pulls:
    at rest, on the 2-core machine, the worst of 100 such runs was 3.1 and 4.3 × the steady
    p99 (docs/performance.md, "Measuring a bulk change against its noise")."""
    check_answers(port, 100)
    small_memory = settled_memory(master)
    echo = measure(port, scratch, "echo", 100, arguments.seconds, 1, label="steady ")
    steady_histogram: collections.Counter = collections.Counter()
    steady = measure(port, scratch, "pull", 100, arguments.seconds, 1, label="steady ",
                     histogram=steady_histogram)
    rules_file = scratch / "bulk-rules.json"
    consumers = arguments.bulk_rules // RULES_PER_CONSUMER
    with rules_file.open("w") as out:
        json.dump({"entries": [rule for consumer in range(100, 100 + consumers)
                               for rule in consumer_rules(consumer)]}, out)
    started = time.monotonic()
    with open(scratch / "import.log", "w") as import_log:
        importing = subprocess.Popen(
            [sys.executable, "manage.py", "import_rules", str(rules_file)], cwd=ROOT,
            env=environment, stdout=import_log, stderr=subprocess.STDOUT)
    windows, imported_at, log_start = [], None, log.stat().st_size
    during: collections.Counter = collections.Counter()
    settled: list[dict[int, int]] = []
    while True:
        window = parse_wrk_latencies(port, scratch, 100, during)
        windows.append(window)
        if imported_at is None and importing.poll() is not None:
            imported_at = time.monotonic() - started
        if imported_at is not None:
            settled.append(web_processes_memory(master))
            with log.open() as server_log:
                server_log.seek(log_start)
                logged = server_log.read()
            # Each process either loads everything again or reads the bulk write's
            # consumers again (orchestration/snapshot/state.py's log lines).
            noticed = logged.count("changed in bulk") + logged.count("Pull snapshot dropped")
            reloads_pending = (logged.count("Pull snapshot dropped")
                               > logged.count("Pull snapshot loaded")
                               or logged.count("changed in bulk")
                               > logged.count("caught up with the bulk changes")
                               or noticed < len(settled[-1]))
            if (memory_settled(settled) and not reloads_pending
                    or time.monotonic() - started > 1800):
                break
    caught_up = time.monotonic() - started
    rest = [parse_wrk_latencies(port, scratch, 100) for _ in windows]
    worst = max(window["p99_ms"] for window in windows)
    worst_at_rest = max(window["p99_ms"] for window in rest)
    pooled = percentile_ms(during, 99)
    ratio = pooled / percentile_ms(steady_histogram, 99)
    window_ratio = worst / worst_at_rest
    valid = (importing.returncode == 0 and steady["valid"] and echo["valid"]
             and all(window["valid"] for window in windows + rest))
    print_memory(small_memory, settled[-1] if settled else {}, arguments.bulk_rules)
    print(f"bulk import of {arguments.bulk_rules} rules: exit status {importing.returncode} "
          f"after {imported_at:.1f} s; caught up (memory settled) after {caught_up:.1f} s; "
          f"{len(windows)} windows of {BULK_WINDOW_SECONDS} s, then as many at rest")
    print("pull p99 per window (ms): " + " ".join(f"{w['p99_ms']:.1f}" for w in windows))
    print("at rest, per window (ms): " + " ".join(f"{w['p99_ms']:.1f}" for w in rest))
    print(f"worst window p99 during the bulk change / at rest {window_ratio:6.2f}   goal <= "
          f"{BULK_GOAL:.0f}   (worst {worst:.1f} ms, at rest {worst_at_rest:.1f} ms; median "
          f"window {statistics.median(w['p99_ms'] for w in windows):.1f} ms, at rest "
          f"{statistics.median(w['p99_ms'] for w in rest):.1f} ms)")
    met = ratio <= BULK_GOAL and window_ratio <= BULK_GOAL
    verdict = ("met" if met else "NOT met") if valid else "invalid (errors)"
    print(f"pull p99 during the bulk change / steady {ratio:6.2f}   goal <= {BULK_GOAL:.0f}   "
          f"{verdict}   (p99 of the {sum(during.values())} pulls during the bulk change "
          f"{pooled:.1f} ms, steady p99 {steady['p99_ms']:.1f} ms, echo p99 "
          f"{echo['p99_ms']:.1f} ms; met needs the window figure above too)")
    return valid


# wrk's Lua `done` hook writes its latency histogram: a line per recorded value (µs), count.
HISTOGRAM_LUA = """
function done(summary, latency, requests)
  for i = 1, #latency do
    local value, count = latency(i)
    io.write(string.format("histogram %d %d\\n", value, count))
  end
end
"""


def histogram_add(output: str, histogram: collections.Counter) -> None:
    """Add the `histogram` lines of a wrk run (HISTOGRAM_LUA) to `histogram` (µs: count)."""
    for line in output.splitlines():
        if line.startswith("histogram "):
            _, value, count = line.split()
            histogram[int(value)] += int(count)


def percentile_ms(histogram: collections.Counter, percent: float) -> float:
    """The latency (ms) below which `percent` % of a histogram's requests were answered."""
    total, seen = sum(histogram.values()), 0
    for value in sorted(histogram):
        seen += histogram[value]
        if seen * 100 >= total * percent:
            return value / 1000
    return float("nan")


def parse_wrk_latencies(port: int, scratch: Path, consumers: int,
                        histogram: collections.Counter | None = None) -> dict:
    """One single-connection pull run of BULK_WINDOW_SECONDS (quietly); its latencies are
    added to `histogram` when given."""
    path, body = SCENARIOS["pull"]
    script = scratch / "pull.lua"
    script.write_text(wrk_script(path, body, consumers) + HISTOGRAM_LUA)
    output = run_wrk(port, path, script=script, seconds=BULK_WINDOW_SECONDS, connections=1)
    if histogram is not None:
        histogram_add(output, histogram)
    figures = parse_wrk(output)
    figures["valid"] = not figures["non_2xx"] and not figures["socket_errors"]
    return figures


def memory_settled(looks: list[dict[int, int]], count: int = 5) -> bool:
    """The last `count` looks name the same processes, none more than 1 % from the first."""
    recent = looks[-count:]
    return len(recent) == count and all(
        set(look) == set(recent[0])
        and all(abs(look[pid] - recent[0][pid]) <= recent[0][pid] / 100 for pid in look)
        for look in recent)


# Issue 34, goal 4: each web process's resident memory with the default process count, or
# the measured cost of a rule and the setting that bounds it (PULL_SNAPSHOT_MAX_RULES).
MEMORY_GOAL_BYTES = 200 * 2**20


def web_processes_memory(master: int) -> dict[int, int]:
    """Resident bytes of each gunicorn worker of `master` (Linux's /proc; the master's
    other children, nginx in front, left out)."""
    memory = {}
    for child in Path(f"/proc/{master}/task/{master}/children").read_text().split():
        with contextlib.suppress(OSError):
            if b"gunicorn" not in Path(f"/proc/{child}/cmdline").read_bytes():
                continue
            for line in Path(f"/proc/{child}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    memory[int(child)] = int(line.split()[1]) * 1024
    return memory


def settled_memory(master: int, timeout: float = 300.0) -> dict[int, int]:
    """`web_processes_memory` once no worker's has moved by more than 1 % over three looks
    5 s apart (each worker applies the load's changes, or loads its snapshot again, at its
    own pace), or after `timeout` seconds."""
    deadline, looks = time.monotonic() + timeout, [web_processes_memory(master)]
    while time.monotonic() < deadline and not memory_settled(looks, 3):
        time.sleep(5)
        looks.append(web_processes_memory(master))
    return looks[-1]


def print_memory(small: dict[int, int], large: dict[int, int], added_rules: int) -> None:
    """Each web process's resident memory at both sizes, the cost of a rule, the goal."""
    mib = 2**20
    print("web processes' resident memory (MiB), 1000 rules -> large: "
          + ", ".join(f"{small.get(pid, 0) / mib:.0f} -> {rss / mib:.0f}"
                      for pid, rss in sorted(large.items())))
    grown = [rss - small[pid] for pid, rss in large.items() if pid in small]
    per_rule = statistics.median(grown) / added_rules if grown else float("nan")
    biggest = max(large.values(), default=0)
    verdict = "met" if biggest <= MEMORY_GOAL_BYTES else "NOT met"
    print(f"web process memory at the large load: largest {biggest / mib:.0f} MiB of "
          f"{len(large)} processes   goal <= {MEMORY_GOAL_BYTES / mib:.0f} MiB {verdict}   "
          f"(median growth {per_rule:.0f} bytes a rule; PULL_SNAPSHOT_MAX_RULES bounds it)")


def relative_p50(port: int, scratch: Path, consumers: int,
                 arguments: argparse.Namespace) -> dict:
    """--rounds rounds of echo then pull on one connection: the median of the rounds' pull
    p50 / echo p50."""
    seconds = max(1, arguments.seconds // arguments.rounds)
    shares, valid = [], True
    for _ in range(arguments.rounds):
        echo = measure(port, scratch, "echo", consumers, seconds, 1)
        pull = measure(port, scratch, "pull", consumers, seconds, 1)
        shares.append(pull["p50_ms"] / echo["p50_ms"])
        valid = valid and echo["valid"] and pull["valid"]
    return {"share": statistics.median(shares), "valid": valid}


def start_profile(py_spy: str, master: int, output: Path, seconds: int) -> subprocess.Popen:
    """py-spy on the first gunicorn worker for the run's length (raw collapsed stacks)."""
    worker = int(Path(f"/proc/{master}/task/{master}/children").read_text().split()[0])
    return subprocess.Popen(
        [py_spy, "record", "--pid", str(worker), "--duration", str(max(1, seconds - 1)),
         "--rate", "200", "--format", "raw", "--output", str(output), "--nonblocking"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def print_profile(path: Path, top: int = 25) -> None:
    """The frames with most samples of py-spy's raw output: own (self) and total (inclusive)."""
    if not path.exists():
        print("profile: py-spy wrote nothing")
        return
    own, total, samples = profile_counts(path.read_text())
    print(f"profile: {samples} samples of one worker (active threads; py-spy leaves idle ones out)")
    ours = collections.Counter({frame: count for frame, count in total.items()
                                if frame.split("(")[-1].split("/")[0] in SERVICE_PACKAGES})
    for label, counts in (("self", own), ("total", total), ("total, service code", ours)):
        print(f"  top {label}:")
        for frame, count in counts.most_common(top):
            print(f"    {100 * count / samples:5.1f}%  {frame}")


def profile_counts(raw: str) -> tuple[collections.Counter, collections.Counter, int]:
    """Per frame: samples where it is the innermost one, samples that contain it, all samples."""
    own, total, samples = collections.Counter(), collections.Counter(), 0
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = stack.split(";")
        samples += int(count)
        own[frames[-1]] += int(count)
        for frame in set(frames):
            total[frame] += int(count)
    return own, total, samples


if __name__ == "__main__":
    main()
