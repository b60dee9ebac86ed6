"""History query at scale: fills a PostgreSQL database with N orchestration jobs (default one
million) and prints how long the history query takes, through its selector and over HTTP (the
Django test client: routing, authentication, validation, serialization; no socket).

    make bench      # or: .venv/bin/python bench/history_query.py [--jobs N] [--drop]

It uses its own database (BENCH_HISTORY_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/so_bench_history) on a loopback address, created when
missing and reused while it holds N jobs (`--drop` removes it at the end). `--baseline` first
migrates the orchestration app back to before the history indexes (0002), to measure without
them; the next run without it creates them again. Figures: docs/performance.md.
"""
import argparse
import ipaddress
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ["DATABASE_URL"] = os.environ.get(
    "BENCH_HISTORY_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/so_bench_history")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("MANAGEMENT_POLICY", "sysop-only")

import django  # noqa: E402

django.setup()

import psycopg  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402

from conventions.pagination import parse_pagination  # noqa: E402
from orchestration.history.selectors import (  # noqa: E402
    SORT_COLUMNS,
    SORTING,
    job_filters_parse,
    job_list,
)
from orchestration.models import OrchestrationJob  # noqa: E402

SYSTEMS, DEFINITIONS, SUBSCRIPTIONS = 1000, 200, 5000
BASELINE_MIGRATION = "0002_job_pending_states"
PATH = "/serviceorchestration/orchestration/mgmt/history/query"
LIMIT_MS = 50.0


def subscription_id(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012x}"


def admin_connection() -> psycopg.Connection:
    db = settings.DATABASES["default"]
    host = db["HOST"] or "127.0.0.1"
    if host != "localhost" and not ipaddress.ip_address(host).is_loopback:
        sys.exit(f"refusing a non-loopback database host: {host}")
    return psycopg.connect(host=host, port=db["PORT"] or 5432, user=db["USER"],
                           dbname="postgres", autocommit=True)


def ensure_database() -> None:
    name = settings.DATABASES["default"]["NAME"]
    with admin_connection() as admin:
        if not admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            admin.execute(f'CREATE DATABASE "{name}"')


def drop_database() -> None:
    connection.close()
    with admin_connection() as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{settings.DATABASES["default"]["NAME"]}"')


def fill(count: int) -> None:
    """Job i, oldest first, one every 1.3 s (about 15 days for a million): 30 % PUSH (of 5000
    subscriptions), 5 % ERROR, 0.1 % each PENDING and IN_PROGRESS, 1000 systems, 200 service
    definitions (2 % of pulls without one)."""
    if OrchestrationJob.objects.count() == count:
        return
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE orchestration_orchestrationjob")
        cursor.execute("""
            INSERT INTO orchestration_orchestrationjob
                (id, type, status, requester, target, service_definition, subscription_id,
                 result_count, message, created_at, started_at, finished_at)
            SELECT gen_random_uuid(), j.type, j.status, j.requester,
                   CASE WHEN j.type = 'PUSH' THEN 'System' || (h.target %% %(s)s)
                        ELSE j.requester END,
                   CASE WHEN j.type = 'PULL' AND (h.type / 10) %% 50 = 7 THEN NULL
                        ELSE 'service' || (h.definition %% %(d)s) END,
                   CASE WHEN j.type = 'PUSH' THEN ('00000000-0000-4000-8000-'
                        || lpad(to_hex(h.subscription %% %(sub)s), 12, '0'))::uuid END,
                   1, CASE j.status WHEN 'DONE' THEN '1 local result(s)'
                                    WHEN 'ERROR' THEN 'ValueError: boom' ELSE '' END,
                   j.created,
                   CASE WHEN j.status <> 'PENDING' THEN j.created + interval '10 ms' END,
                   CASE WHEN j.status IN ('DONE', 'ERROR') THEN j.created + interval '60 ms' END
            FROM generate_series(0::bigint, %(n)s - 1) AS i,
            -- independent pseudo-random attributes of job i
            LATERAL (SELECT abs(hashint8(i)) AS type, abs(hashint8(i + 1000003)) AS status,
                            abs(hashint8(i + 2000003)) AS requester,
                            abs(hashint8(i + 3000017)) AS target,
                            abs(hashint8(i + 4000037)) AS definition,
                            abs(hashint8(i + 5000011)) AS subscription) AS h,
            LATERAL (SELECT
                CASE WHEN h.type %% 10 < 3 THEN 'PUSH' ELSE 'PULL' END AS type,
                CASE WHEN h.status %% 1000 = 0 THEN 'PENDING'
                     WHEN h.status %% 1000 = 1 THEN 'IN_PROGRESS'
                     WHEN h.status %% 1000 < 52 THEN 'ERROR' ELSE 'DONE' END AS status,
                'System' || (h.requester %% %(s)s) AS requester,
                now() - ((%(n)s - i) * interval '1.3 seconds') AS created) AS j
        """, {"n": count, "s": SYSTEMS, "d": DEFINITIONS, "sub": SUBSCRIPTIONS})
        cursor.execute("VACUUM ANALYZE orchestration_orchestrationjob")  # Django autocommits
    print(f"filled {count} jobs in {time.perf_counter() - started:.1f} s")


def selector_run(body: dict):
    body = dict(body)
    page = parse_pagination(body.pop("pagination", None), **SORTING)
    filters = job_filters_parse(**body)
    return lambda: job_list(filters=filters, page=page)[1]


def http_run(body: dict):
    client = Client()
    wire = {"requester_systems": "requesterSystems", "target_systems": "targetSystems",
            "service_definitions": "serviceDefinitions", "subscription_ids": "subscriptionIds"}
    payload = json.dumps({wire.get(key, key): value for key, value in body.items()})

    def run() -> int:
        response = client.post(PATH, payload, content_type="application/json",
                               HTTP_AUTHORIZATION="Bearer SYSTEM//Sysop")
        assert response.status_code == 200, response.content[:300]
        return response.json()["count"]
    return run


def timed(run, repeat: int) -> tuple[float, float, int]:
    result = run()  # warm up
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        result = run()
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return statistics.median(samples), samples[max(0, round(repeat * 0.95) - 1)], result


def cases() -> list[tuple[str, dict]]:
    some_ids = [str(i) for i in OrchestrationJob.objects.values_list("id", flat=True)[:10]]
    small = {"pagination": {"page": 0, "size": 50}}
    return [
        ("no filters (page 0 of 1000)", {}),
        ("no filters, page 0 of 50", small),
        ("ids (10)", {"ids": some_ids}),
        ("statuses DONE", {"statuses": ["DONE"]}),
        ("statuses ERROR", {"statuses": ["ERROR"]}),
        ("statuses PENDING, IN_PROGRESS", {"statuses": ["PENDING", "IN_PROGRESS"]}),
        ("type PUSH", {"type": "PUSH"}),
        ("type PULL", {"type": "PULL"}),
        ("requesterSystems (1)", {"requester_systems": ["System42"]}),
        ("targetSystems (1)", {"target_systems": ["System42"]}),
        ("serviceDefinitions (1)", {"service_definitions": ["service7"]}),
        ("subscriptionIds (1)", {"subscription_ids": [subscription_id(42)]}),
        ("type PUSH + DONE + serviceDefinition", {
            "type": "PUSH", "statuses": ["DONE"], "service_definitions": ["service7"]}),
        ("PULL + ERROR + requester", {
            "type": "PULL", "statuses": ["ERROR"], "requester_systems": ["System42"]}),
        ("deep page: 50 of 1000 (offset 50 000)", {"pagination": {"page": 50, "size": 1000}}),
        ("deep page: ERROR, 20 of 1000 (offset 20 000)",
         {"statuses": ["ERROR"], "pagination": {"page": 20, "size": 1000}}),
        *[(f"sort {field} {direction}", {"pagination": {
            "page": 0, "size": 100, "sortField": field, "direction": direction}})
          for field in SORT_COLUMNS for direction in ("ASC", "DESC")],
    ]


def explain(body: dict) -> None:
    """EXPLAIN ANALYZE of both queries of one case (the page, then the count)."""
    body = dict(body)
    page = parse_pagination(body.pop("pagination", None), **SORTING)
    from conventions.pagination import order
    from orchestration.history.selectors import _filtered
    jobs = _filtered(job_filters_parse(**body))
    ordered = order(jobs, page, columns=SORT_COLUMNS, tie_breaker="id")
    print(ordered[page.offset:page.offset + page.size].explain(analyze=True))
    sql, params = jobs.order_by().values("pk").query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN ANALYZE SELECT count(*) FROM ({sql}) AS matches", params)
        print("\n".join(row[0] for row in cursor.fetchall()))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--baseline", action="store_true",
                        help="measure without the history indexes (migrates back to 0002)")
    parser.add_argument("--no-http", action="store_true")
    parser.add_argument("--explain", metavar="CASE", help="EXPLAIN ANALYZE the named case")
    parser.add_argument("--drop", action="store_true", help="drop the database at the end")
    args = parser.parse_args()
    ensure_database()
    call_command("migrate", verbosity=0)
    fill(args.jobs)
    if args.baseline:
        call_command("migrate", "orchestration", BASELINE_MIGRATION, verbosity=0)
    table = cases()
    if args.explain:
        explain(dict(table)[args.explain])
        return
    print(f"PostgreSQL {connection.pg_version // 10000}, {OrchestrationJob.objects.count()} jobs, "
          f"{SYSTEMS} systems, {DEFINITIONS} service definitions"
          f"{' (baseline: no history indexes)' if args.baseline else ''}")
    print(f"{'query':<44} {'count':>8} {'median':>8} {'p95':>8}  <50  "
          f"{'HTTP med':>8} {'HTTP p95':>8}")
    for label, body in table:
        median, p95, count = timed(selector_run(body), args.repeat)
        line = f"{label:<44} {count:>8} {median:>8.1f} {p95:>8.1f}  {'yes' if p95 < LIMIT_MS else 'NO ':<3}"
        if not args.no_http:
            http_median, http_p95, _ = timed(http_run(body), args.repeat)
            line += f"  {http_median:>8.1f} {http_p95:>8.1f}"
        print(line, flush=True)
    if args.drop:
        drop_database()


if __name__ == "__main__":
    main()
