"""Ours against the Java SimpleStoreServiceOrchestration 5.2.0 on the same data (issue 32,
item 4): pull req/s, p50 and p99 (wrk, 16 connections), the create of 1,000 rules, process
memory and start-up time, printed as a Markdown table for docs/performance.md.

    # the Java system running (docs/local-cloud.md, "Beside the official Java systems"), its
    # store empty; 10 000 instances, 100 000 rules; the restart command and log are yours:
    .venv/bin/python bench/against_java.py --java-url http://127.0.0.1:18465 \\
        --java-restart 'your-stop-command; your-start-command' \\
        --java-log /path/to/simplestore.log
    # trying it out: ... --instances 100 --rules 1000 --seconds 3 --warmup 2

The Java pull (service/utils/ServiceOrchestration.java) reads the consumer's entries for the
definition from its own table (MariaDB) by priority, applies MATCHMAKING / ONLY_PREFERRED and
answers each instance id split into provider, definition and version: no interfaces, no
metadata. It never asks the ServiceRegistry, at pull or at rule create (which only checks
consumer/definition/priority uniqueness in its table), so instances in the SR would change
nothing on its side. Ours therefore runs standalone as `make run` does (with
SERVICE_REGISTRY_URL the SR's lookups would be ours only, measuring the SR), the instances in
its local catalog, whose interfaces and metadata its pull answers: ours does more per pull
than Java, not less. `--no-catalog` leaves our catalog empty: both then answer instance ids
only (ours with its ignoredFields warning), the closest to equal work. Both record each pull:
Java with three synchronous writes (job created, IN_PROGRESS, DONE), ours written behind in
batches (orchestration.history.job_writer).

Data, the same on both sides: P providers × P definitions (P = √INSTANCES), RULES / 10
consumers with 10 rules each (`Consumer<i>` → pullService<i % P> over 10 providers,
priorities 1..10), loaded through each API in creates of 1000 (`candidates`, as `Sysop`).
Ours: a fresh PostgreSQL database (BENCH_DATABASE_URL) loaded by one server, then served by a
second one started on the loaded data, as bench/pull_http.py starts it (harness).

- start-up: ours from the gunicorn master's start (/proc) to its first echo answer (polled
  every 0.2 s); Java: `--java-startup-seconds`, or Y of the last "Started … in X seconds
  (process running for Y)" line of `--java-log` (JVM start to ready, SR registration
  included). `--java-restart CMD` (shell) restarts Java once loaded: both start on the data.
- pull: a warm-up wrk run each (`--warmup` s), then ROUNDS interleaved rounds (--seconds /
  ROUNDS each, taking turns at going first), median per system; each request as a random
  consumer (`Bearer SYSTEM//Consumer<i>`) asking its definition with MATCHMAKING (1 result;
  `--full-list`: 10). Non-2xx answers or socket errors make a row invalid.
- memory after the pulls: RSS (/proc) of the JVM (`--java-pid`, or the process on
  --java-url's port; it ran with -Xmx256m) and of ours summed over the gunicorn
  master and its children (workers, nginx), shared pages counted more than once (the PSS
  totals are printed below the table). Databases are counted on neither side.
- create: the median of 3 creates of 1000 rules (100 new consumers each), on the loaded store.

The Java store must hold no rules of Sysop at the start (they would clash): `--java-clean`
deletes them through its API (slow at 100 000), or recreate its database (`mariadb -uroot <
create_empty_db.sql` in serviceorchestration-simple/src/main/resources/database of its
sources) and restart it. Loopback only; needs wrk.
"""
import argparse
import contextlib
import itertools
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (ECHO, INSTANCES, PULL, RULES, SYSOP, create_database,  # noqa: E402
                     parse_wrk, post_json, require_wrk, run_wrk, running_server,
                     server_environment)

DATABASE_URL = os.environ.get(
    "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/serviceorchestration_java_bench")
PER_CONSUMER, BULK, CREATE_ROUNDS, SEED = 10, 1000, 3, 32
JAVA, OURS = "Java SimpleStore 5.2.0", "ours"
JAVA_QUERY = "/serviceorchestration/orchestration/mgmt/simple-store/query"
JAVA_REMOVE = "/serviceorchestration/orchestration/mgmt/simple-store/remove"
STARTED = re.compile(r"Started \S+ in ([\d.]+) seconds(?: \(process running for ([\d.]+)\))?")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--java-url", default="http://127.0.0.1:18465")
    parser.add_argument("--java-pid", type=int, help="default: the process on --java-url's port")
    parser.add_argument("--java-startup-seconds", type=float)
    parser.add_argument("--java-log", type=Path, help="for the 'Started … seconds' line")
    parser.add_argument("--java-restart", metavar="CMD", help="restart Java after loading")
    parser.add_argument("--java-clean", action="store_true", help="delete Java's old rules")
    parser.add_argument("--instances", type=int, default=10_000, help="a square, >= 100")
    parser.add_argument("--rules", type=int, default=100_000, help="a multiple of 10")
    parser.add_argument("--seconds", type=int, default=30, help="wrk time per system")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=20, help="unmeasured wrk s per system")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--full-list", action="store_true", help="pull without MATCHMAKING")
    parser.add_argument("--no-catalog", action="store_true", help="ours without instances")
    arguments = parser.parse_args()
    providers = math.isqrt(arguments.instances)
    if providers < PER_CONSUMER or providers ** 2 != arguments.instances:
        sys.exit("--instances must be a square of at least 100 (providers x definitions)")
    if arguments.rules < PER_CONSUMER or arguments.rules % PER_CONSUMER:
        sys.exit("--rules must be a multiple of 10")
    consumers = arguments.rules // PER_CONSUMER
    require_wrk()
    java_url = urllib.parse.urlsplit(arguments.java_url)
    if java_url.hostname not in ("127.0.0.1", "localhost") or not java_url.port:
        sys.exit("--java-url must be http://127.0.0.1:<port> (loopback only)")
    java_port = java_url.port
    java_echo(java_port)
    prepare_java_store(java_port, arguments.java_clean)
    body = {"serviceRequirement": {"serviceDefinition": "pullService%d"}}
    if not arguments.full_list:
        body["orchestrationFlags"] = {"MATCHMAKING": True}

    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        create_database(DATABASE_URL, fresh=True)
        environment = server_environment(DATABASE_URL)
        with running_server(environment, scratch / "gunicorn-load.log"):
            if not arguments.no_catalog:
                load_instances(int(environment["PORT"]), providers)
            load_rules(OURS, int(environment["PORT"]), providers, range(consumers))
        load_rules(JAVA, java_port, providers, range(consumers))
        if arguments.java_restart:
            # Its output to a file: a start script's child keeps a pipe open while Java runs.
            with open(scratch / "java-restart.log", "w+") as output:
                subprocess.run(arguments.java_restart, shell=True, check=True, stdout=output,
                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
                output.seek(0)
                print(output.read(), end="", flush=True)
            java_echo(java_port)
        java_pid = (None if arguments.java_restart else arguments.java_pid) or pid_on(java_port)
        java_startup = arguments.java_startup_seconds or java_log_startup(arguments.java_log)

        environment = server_environment(DATABASE_URL)
        with running_server(environment, scratch / "gunicorn.log") as server:
            ours_startup = process_age(server.pid)
            systems = {JAVA: java_port, OURS: int(environment["PORT"])}
            for name, port in systems.items():
                check_answer(name, port, body, providers, consumers // 2,
                             PER_CONSUMER if arguments.full_list else 1)
            script = scratch / "pull.lua"
            script.write_text(wrk_script(body, consumers, providers))
            for name, port in systems.items():
                wrk(port, script, arguments.warmup, arguments.connections)
                print(f"{name}: warmed up ({arguments.warmup} s)", flush=True)
            pulls = interleaved_pulls(systems, script, arguments)
            memory = {JAVA: memory_mb(java_pid, tree=False),
                      OURS: memory_mb(server.pid, tree=True)}
            creates = {name: create_seconds(name, port, providers, consumers)
                       for name, port in systems.items()}
        startups = {JAVA: java_startup, OURS: ours_startup}
        print_table(arguments, pulls, creates, memory, startups)
        if not all(figures["valid"] for figures in pulls.values()):
            sys.exit("invalid measurement: errors during the pull runs")


def java_echo(port: int) -> None:
    """Stop unless the Java system answers its echo (which wants an identity)."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{ECHO}", headers=SYSOP)
    try:
        urllib.request.urlopen(request, timeout=10).read()
    except OSError as error:
        sys.exit(f"the Java system on port {port} does not answer echo: {error}")


def prepare_java_store(port: int, clean: bool) -> None:
    """Stop unless the Java store holds no rules of Sysop (`clean`: delete them, 100 a call)."""
    query = {"createdBy": "Sysop", "pagination": {"page": 0, "size": 100}}
    while (page := post_json(port, JAVA_QUERY, query, SYSOP))["count"]:
        if not clean:
            sys.exit(f"the Java store holds {page['count']} rules of Sysop: give --java-clean,"
                     " or recreate its database (see this script's docstring)")
        ids = ",".join(entry["id"] for entry in page["entries"])
        urllib.request.urlopen(urllib.request.Request(
            f"http://127.0.0.1:{port}{JAVA_REMOVE}?uuids={ids}", method="DELETE",
            headers=SYSOP), timeout=300).read()
        if page["count"] <= len(page["entries"]):
            print("Java store: Sysop's rules deleted", flush=True)


def instance_id(provider: int, definition: int) -> str:
    return f"Provider{provider}|pullService{definition}|1.0.0"


def load_instances(port: int, providers: int) -> None:
    """Our catalog: instance n is Provider<n // P> offering pullService<n % P>."""
    started, total = time.monotonic(), providers * providers
    for start in range(0, total, BULK):
        post_json(port, INSTANCES, {"instances": [{
            "systemName": f"Provider{n // providers}", "version": "1.0.0",
            "serviceDefinitionName": f"pullService{n % providers}",
            "metadata": {"region": f"zone{n % 7}", "rank": n % 10},
            "interfaces": [{"templateName": "generic_http", "protocol": "http", "policy": "NONE",
                            "properties": {"accessAddresses": ["127.0.0.1"],
                                           "accessPort": 20000 + n // providers,
                                           "basePath": f"/service{n % providers}",
                                           "operations": {"query": {"path": "/query",
                                                                    "method": "GET"}}}}]}
            for n in range(start, min(start + BULK, total))]}, SYSOP)
    print(f"{OURS}: loaded {total} instances in {time.monotonic() - started:.1f} s", flush=True)


def rules_of(consumer: int, providers: int) -> list[dict]:
    """Consumer<i>'s 10 rules, for pullService<i % P>, over 10 providers."""
    return [{"consumer": f"Consumer{consumer}", "priority": priority,
             "serviceInstanceId": instance_id((consumer // providers + priority) % providers,
                                              consumer % providers)}
            for priority in range(1, PER_CONSUMER + 1)]


def load_rules(name: str, port: int, providers: int, consumers: range,
               report: bool = True) -> float:
    """The rules of `consumers` in creates of BULK; the seconds taken."""
    started = time.monotonic()
    rules = [rule for consumer in consumers for rule in rules_of(consumer, providers)]
    for start in range(0, len(rules), BULK):
        post_json(port, RULES, {"candidates": rules[start:start + BULK]}, SYSOP)
        if report and (start + BULK) % 20_000 == 0:
            print(f"  {name}: {start + BULK} rules, {time.monotonic() - started:.0f} s",
                  flush=True)
    seconds = time.monotonic() - started
    if report:
        print(f"{name}: loaded {len(rules)} rules in {seconds:.1f} s", flush=True)
    return seconds


def create_seconds(name: str, port: int, providers: int, consumers: int) -> float:
    """The median time of CREATE_ROUNDS creates of 1000 rules (100 new consumers each)."""
    new = BULK // PER_CONSUMER
    times = [load_rules(name, port, providers,
                        range(consumers + k * new, consumers + (k + 1) * new), report=False)
             for k in range(CREATE_ROUNDS)]
    print(f"{name}: creates of {BULK} rules: {', '.join(f'{t:.2f}' for t in times)} s")
    return statistics.median(times)


def check_answer(name: str, port: int, body: dict, providers: int, consumer: int,
                 expected: int) -> None:
    """One pull answers what the data says (so that wrk measures the intended work)."""
    definition = consumer % providers
    request = {**body, "serviceRequirement": {"serviceDefinition": f"pullService{definition}"}}
    answer = post_json(port, PULL, request,
                       {"Authorization": f"Bearer SYSTEM//Consumer{consumer}"})
    first = instance_id((consumer // providers + 1) % providers, definition)
    results = answer.get("results") or []
    if len(results) != expected or results[0]["serviceInstanceId"] != first:
        sys.exit(f"{name}: expected {expected} results starting with {first}, got {answer}")


def wrk_script(body: dict, consumers: int, providers: int) -> str:
    """Each request as a random consumer, asking for its own service definition."""
    template = json.dumps(json.dumps(body, separators=(",", ":")))  # a Lua string literal
    return f"""-- generated by bench/against_java.py
local threads = 0
function setup(thread) threads = threads + 1; thread:set("seed", {SEED} + threads) end
function init(args) math.randomseed(seed) end
function request()
  local i = math.random(0, {consumers - 1})
  return wrk.format("POST", "{PULL}", {{["Authorization"] = "Bearer SYSTEM//Consumer" .. i,
    ["Content-Type"] = "application/json"}}, string.format({template}, i % {providers}))
end
"""


def wrk(port: int, script: Path, seconds: int, connections: int) -> dict:
    figures = parse_wrk(run_wrk(port, PULL, script=script, seconds=seconds,
                                connections=connections))
    figures["valid"] = not figures["non_2xx"] and not figures["socket_errors"]
    return figures


def interleaved_pulls(systems: dict[str, int], script: Path,
                      arguments: argparse.Namespace) -> dict[str, dict]:
    """ROUNDS rounds (the systems take turns at going first); the median per system."""
    seconds = max(1, arguments.seconds // arguments.rounds)
    runs: dict[str, list[dict]] = {name: [] for name in systems}
    for round_number in range(arguments.rounds):
        for name, port in list(systems.items())[::-1 if round_number % 2 else 1]:
            figures = wrk(port, script, seconds, arguments.connections)
            runs[name].append(figures)
            print(f"{name:<24} {figures['requests_per_second']:8.1f} req/s   "
                  f"p50 {figures['p50_ms']:8.2f} ms   p99 {figures['p99_ms']:8.2f} ms   "
                  f"non-2xx {figures['non_2xx']}   socket errors {figures['socket_errors']}",
                  flush=True)
    return {name: {key: statistics.median(run[key] for run in figures)
                   for key in ("requests_per_second", "p50_ms", "p99_ms")}
            | {"valid": all(run["valid"] for run in figures)}
            for name, figures in runs.items()}


def pid_on(port: int) -> int:
    """The pid of the process listening on the loopback `port`."""
    listing = subprocess.run(["ss", "-ltnpH", f"sport = :{port}"], capture_output=True,
                             text=True, check=True).stdout
    if not (match := re.search(r"pid=(\d+)", listing)):
        sys.exit(f"no process found listening on port {port}: give --java-pid")
    return int(match[1])


def java_log_startup(log: Path | None) -> float | None:
    """From the log's last 'Started … in X seconds (process running for Y)' line: Y (or X)."""
    if log is None:
        return None
    if not (found := STARTED.findall(log.read_text(errors="replace"))):
        sys.exit(f"{log}: no 'Started … in X seconds' line")
    spring, process = found[-1]
    print(f"Java log: Started in {spring} s (process running for {process or '?'} s)")
    return float(process or spring)


def stat_fields(pid: int) -> list[str]:
    """/proc/<pid>/stat after the command name: [state, ppid, …] (fields 3 onwards)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def process_age(pid: int) -> float:
    """Seconds since the process started (starttime, field 22 of /proc/<pid>/stat)."""
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    return uptime - int(stat_fields(pid)[19]) / os.sysconf("SC_CLK_TCK")


def memory_mb(pid: int, tree: bool) -> tuple[float, float]:
    """RSS and PSS in MB of `pid` (`tree`: summed over it and all its descendants)."""
    pids, found = {pid}, {pid}
    while tree and found:
        found = set()
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) not in pids:
                with contextlib.suppress(OSError):
                    if int(stat_fields(int(entry.name))[1]) in pids:
                        found.add(int(entry.name))
        pids |= found
    kb = {"VmRSS": 0, "Pss": 0}
    for each, (field, file) in itertools.product(pids, (("VmRSS", "status"),
                                                        ("Pss", "smaps_rollup"))):
        with contextlib.suppress(OSError):
            text = Path(f"/proc/{each}/{file}").read_text()
            kb[field] += int(re.search(rf"^{field}:\s+(\d+)", text, re.M)[1])
    return kb["VmRSS"] / 1024, kb["Pss"] / 1024


def print_table(arguments: argparse.Namespace, pulls: dict, creates: dict, memory: dict,
                startups: dict) -> None:
    a = arguments
    print(f"\n{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
          f": {a.instances} instances (ours: {'none' if a.no_catalog else 'all'} in its catalog)"
          f", {a.rules} rules; pull {'full list' if a.full_list else 'MATCHMAKING'}, wrk "
          f"{a.connections} connections, median of {a.rounds} × {max(1, a.seconds // a.rounds)}"
          f" s; create: median of {CREATE_ROUNDS} creates of {BULK} rules\n")
    print("| System | pull req/s | p50 ms | p99 ms | create 1000 rules s | RSS MB | start-up s |")
    print("|---|---|---|---|---|---|---|")
    for name, figures in pulls.items():
        startup = "–" if startups[name] is None else f"{startups[name]:.1f}"
        print(f"| {name}{'' if figures['valid'] else ' (invalid: errors)'} | "
              f"{figures['requests_per_second']:.0f} | {figures['p50_ms']:.1f} | "
              f"{figures['p99_ms']:.1f} | {creates[name]:.2f} | {memory[name][0]:.0f} | "
              f"{startup} |")
    print(f"\nRSS: Java the JVM (PSS {memory[JAVA][1]:.0f} MB); ours the gunicorn master, its "
          f"workers and nginx summed (PSS {memory[OURS][1]:.0f} MB). Databases not counted.")


if __name__ == "__main__":
    main()
