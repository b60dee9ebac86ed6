"""Rule store at scale: fills a PostgreSQL database with N rules (default one million) and
prints how long the management query and the per-consumer lookup of pull take.

    make bench                      # or: DATABASE_URL=postgres://... .venv/bin/python bench/rules_at_scale.py

It uses its own database (BENCH_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/serviceorchestration_bench), created when missing.
"""
import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ["DATABASE_URL"] = os.environ.get(
    "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/serviceorchestration_bench")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

import psycopg  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from conventions.pagination import parse_pagination  # noqa: E402
from store.models import Rule  # noqa: E402
from store.selectors.rules import (  # noqa: E402
    SORTING,
    rule_filters_parse,
    rule_list,
)

CONSUMERS = 10_000


def ensure_database() -> None:
    db = settings.DATABASES["default"]
    with psycopg.connect(host=db["HOST"], port=db["PORT"] or 5432, user=db["USER"],
                         dbname="postgres", autocommit=True) as admin:
        exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                               [db["NAME"]]).fetchone()
        if not exists:
            admin.execute(f'CREATE DATABASE "{db["NAME"]}"')


def fill(count: int) -> None:
    if Rule.objects.count() == count:
        return
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE store_rule")
        # Rule i: consumer i % 10000; its (i // 10000)th rule, over 20 services and priorities.
        cursor.execute("""
            INSERT INTO store_rule (id, consumer, service_definition, service_instance_id,
                                    priority, created_by, updated_by, created_at, updated_at)
            SELECT gen_random_uuid(), 'Consumer' || (i %% %(c)s), 'service' || ((i / %(c)s) %% 20),
                   'Provider' || (i %% 500) || '|service' || ((i / %(c)s) %% 20) || '|1.0.0',
                   (i / %(c)s) / 20 + 1, 'Sysop', 'Sysop',
                   now() - (i || ' seconds')::interval, now() - (i || ' seconds')::interval
            FROM generate_series(0, %(n)s - 1) AS i
        """, {"c": CONSUMERS, "n": count})
        cursor.execute("ANALYZE store_rule")
    print(f"filled {count} rules in {time.perf_counter() - started:.1f} s")


def timed(label: str, run, repeat: int = 30) -> None:
    run()  # warm up
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        result = run()
        samples.append((time.perf_counter() - started) * 1000)
    print(f"{label:<58} median {statistics.median(samples):7.2f} ms   "
          f"p95 {sorted(samples)[int(repeat * 0.95) - 1]:7.2f} ms   ({result} rows)")


def query(body: dict):
    page = parse_pagination(body.pop("pagination", None), **SORTING)
    filters = rule_filters_parse(**body)
    return lambda: len(rule_list(filters=filters, page=page)[0])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rules", type=int, default=1_000_000)
    args = parser.parse_args()
    ensure_database()
    call_command("migrate", verbosity=0)
    fill(args.rules)
    print(f"PostgreSQL, {Rule.objects.count()} rules, {CONSUMERS} consumers")
    timed("pull lookup: one consumer's rules by priority",
          lambda: len(list(Rule.objects.filter(consumer="Consumer4242")
                           .order_by("priority", "service_definition"))))
    timed("pull lookup: one consumer and service definition",
          lambda: len(list(Rule.objects.filter(consumer="Consumer4242",
                                               service_definition="service7")
                           .order_by("priority"))))
    timed("query: consumerNames, default order, with count",
          query({"consumer_names": ["Consumer4242"]}))
    timed("query: serviceDefinitions, page 0 size 100, with count",
          query({"service_definitions": ["service7"],
                 "pagination": {"page": 0, "size": 100}}))
    timed("query: serviceInstanceIds, with count",
          query({"service_instance_ids": ["Provider42|service7|1.0.0"]}))
    timed("query: empty, page 0 of 1000 by createdAt, with count", query({}), repeat=10)
    timed("query: empty, page 500 of 1000 by priority DESC, with count",
          query({"pagination": {"page": 500, "size": 1000, "direction": "DESC",
                                "sortField": "priority"}}), repeat=10)


if __name__ == "__main__":
    main()
