"""The hot paths' plain statements (database.statements) against the real PostgreSQL."""
import os
import subprocess
import sys
import threading

import pytest
from django.db import close_old_connections, connection, transaction

from database.advisory_locks import advisory_locks, advisory_locks_statement
from database.statements import model_instances, prepared_rows, statements_rows
from subscriptions.models import FeedCursor
from tests.worker import ROOT


def prepared_statements() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [statement for (statement,) in cursor.fetchall()]


@pytest.mark.django_db
class PreparedStatementTests:
    def test_a_prepared_read_is_prepared_on_the_server(self):
        """Django turns psycopg's prepared statements off unless OPTIONS turns them on;
        without settings.py's `prepare_threshold`, `prepare=True` was silently ignored and
        the feed read was planned anew at every pull."""
        sql = "SELECT %s::bigint + 1 AS prepared_here"
        assert prepared_rows(sql, [1]) == [(2,)]
        assert prepared_rows(sql, [2]) == [(3,)]
        assert [s for s in prepared_statements() if "prepared_here" in s] == [
            "SELECT $1::bigint + 1 AS prepared_here"]

    def test_a_prepared_statement_is_planned_once(self):
        """PostgreSQL re-planned the feed read at every read (its custom plan always looks
        cheaper when the position is known): the prepared statements use their generic plan."""
        sql = "SELECT id FROM subscriptions_feedcursor WHERE id > %s ORDER BY id LIMIT %s"
        for position in range(8):
            prepared_rows(sql, [position, 10])
        with connection.cursor() as cursor:
            cursor.execute("SELECT generic_plans, custom_plans FROM pg_prepared_statements "
                           "WHERE statement LIKE '%%subscriptions_feedcursor WHERE id >%%'")
            assert cursor.fetchall() == [(8, 0)]

    def test_djangos_own_queries_are_not_prepared(self):
        for _ in range(10):
            FeedCursor.objects.filter(last_id=12345).exists()
        assert not [s for s in prepared_statements() if "subscriptions_feedcursor" in s]

    def test_the_setting_turns_them_off_for_a_pooler_that_cannot_keep_them(self):
        shown = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c",
             "from django.conf import settings; "
             "print(settings.DATABASES['default']['OPTIONS'].get('prepare_threshold', 'x'))"],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
            env={**os.environ, "DATABASE_URL": "postgres://nobody@127.0.0.1:1/none",
                 "DATABASE_PREPARED_STATEMENTS": "false"})
        assert shown.returncode == 0, shown.stderr[-2000:]
        assert shown.stdout.strip().splitlines()[-1] == "None"


@pytest.mark.django_db
class StatementsRowsTests:
    def test_each_statements_rows_in_order(self):
        with transaction.atomic():
            results = statements_rows([
                ("SELECT %s::int, %s::text", [1, "a%b"]),
                ("SELECT 1 WHERE false", []),
                ("UPDATE subscriptions_feedcursor SET last_id = %s WHERE false", [7]),
                ("SELECT %s::jsonb ->> 'k'", ['{"k": "v"}']),
            ])
        assert results == [[(1, "a%b")], [], [], [("v",)]]

    def test_an_error_rolls_the_statements_back_and_comes_as_djangos(self):
        from django.db import DatabaseError
        with pytest.raises(DatabaseError), transaction.atomic():
            statements_rows([("INSERT INTO subscriptions_feedcursor (last_id, running) "
                              "VALUES (%s, '[]')", [42]),
                             ("SELECT 1 / 0", [])])
        assert not FeedCursor.objects.filter(last_id=42).exists()

    def test_rows_become_instances_as_the_orm_reads_them(self):
        FeedCursor.objects.create(last_id=5, running=[3, 4])
        [row] = prepared_rows("SELECT id, last_id, running, read_at "
                              "FROM subscriptions_feedcursor WHERE last_id = 5", [])
        [cursor] = model_instances(FeedCursor, ["id", "last_id", "running", "read_at"], [row])
        assert (cursor.last_id, cursor.running, cursor.read_at) == (5, [3, 4], None)
        assert not cursor._state.adding


@pytest.mark.django_db(transaction=True)
def test_a_statement_after_a_lock_sees_what_the_holder_committed():
    """statements_rows sends its statements in one round trip; the read after the lock must
    still see the row the lock's holder committed while it waited (a snapshot per statement):
    the subscribe's topic claim rests on it."""
    held, release, seen = threading.Event(), threading.Event(), {}

    def holder():
        try:
            with transaction.atomic():
                advisory_locks("statements-test", ["name"])
                FeedCursor.objects.create(last_id=77)
                held.set()
                release.wait(10)
        finally:
            close_old_connections()

    def waiter():
        try:
            with transaction.atomic():
                _, rows = statements_rows([
                    advisory_locks_statement("statements-test", ["name"]),
                    ("SELECT count(*) FROM subscriptions_feedcursor WHERE last_id = 77", [])])
                seen["count"] = rows[0][0]
        finally:
            close_old_connections()

    first = threading.Thread(target=holder)
    first.start()
    assert held.wait(10)
    second = threading.Thread(target=waiter)
    second.start()
    second.join(0.5)
    assert second.is_alive()  # waiting for the lock
    release.set()
    first.join(10)
    second.join(10)
    assert seen == {"count": 1}
