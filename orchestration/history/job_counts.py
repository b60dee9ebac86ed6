"""Exact job counts per type and status without reading the job table (PostgreSQL): the
triggers of migration 0004 add a `JobCountDelta` row (type, status, ±n) per statement that
changes jobs, in its transaction, so their sum is the exact count under the table's own
snapshot rules (docs/history.md, "Performance"). Other databases count rows.
"""
from collections.abc import Sequence
from pathlib import Path

from django.db import connection

from orchestration.models import JobCountDelta, OrchestrationJob

JOBS = OrchestrationJob._meta.db_table
DELTAS = JobCountDelta._meta.db_table

# The functions and triggers (migration 0004 installs them).
INSTALL_SQL = (Path(__file__).parents[1] / "migrations" / "sql"
               / "0004_job_counts.postgresql.sql").read_text()

UNINSTALL_SQL = """
DROP TRIGGER IF EXISTS job_count_insert ON {jobs};
DROP TRIGGER IF EXISTS job_count_update ON {jobs};
DROP TRIGGER IF EXISTS job_count_delete ON {jobs};
DROP TRIGGER IF EXISTS job_count_truncate ON {jobs};
DROP FUNCTION IF EXISTS orchestration_job_count_insert();
DROP FUNCTION IF EXISTS orchestration_job_count_update();
DROP FUNCTION IF EXISTS orchestration_job_count_delete();
DROP FUNCTION IF EXISTS orchestration_job_count_truncate();
DELETE FROM {deltas};
"""

# One statement: the rows it deletes are those of its snapshot; rows that concurrent writers
# insert meanwhile stay, and a concurrent compaction waits for these rows, then skips them.
COMPACT_SQL = """
WITH gone AS (DELETE FROM {deltas} RETURNING type, status, n)
INSERT INTO {deltas} (type, status, n)
SELECT type, status, sum(n) FROM gone GROUP BY type, status HAVING sum(n) <> 0
"""


def counted_by_triggers() -> bool:
    return connection.vendor == "postgresql"


def job_count(*, statuses: Sequence[str] = (), type: str | None = None) -> int:
    """The exact number of jobs with one of `statuses` (any when empty) and of `type` (any
    when None), from the delta rows. PostgreSQL only (`counted_by_triggers()`)."""
    deltas = JobCountDelta.objects.all()
    if statuses:
        deltas = deltas.filter(status__in=sorted(set(statuses)))
    if type is not None:
        deltas = deltas.filter(type=type)
    with connection.cursor() as cursor:
        sql, params = deltas.values_list("n").query.sql_with_params()
        cursor.execute(f"SELECT COALESCE(SUM(n), 0) FROM ({sql}) AS deltas", params)
        return int(cursor.fetchone()[0])


def job_counts_compact() -> int:
    """Fold the delta rows into one per type and status; returns how many rows are left.
    Nothing to do on other databases."""
    if not counted_by_triggers():
        return 0
    with connection.cursor() as cursor:
        cursor.execute(COMPACT_SQL.format(deltas=DELTAS))
        cursor.execute(f"SELECT count(*) FROM {DELTAS}")
        return int(cursor.fetchone()[0])
