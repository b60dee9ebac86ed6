"""Transaction-scoped PostgreSQL advisory locks on names, taken in one fixed order, so that
concurrent writers of the same things wait for each other instead of deadlocking or racing
to insert the same unique key (docs/rule-store.md, "Concurrent writers"). A name is locked
before the writer reads what it will write, which also covers rows that do not exist yet.
SQLite has one writer at a time (immediate transactions) and needs none of this.
"""
import hashlib
from collections.abc import Iterable

from django.db import connection

from database.statements import Statement, prepared_rows

# Names are locked through one of this many keys per namespace. PostgreSQL keeps advisory
# locks in its shared lock table (max_locks_per_transaction, 64 by default, times
# max_connections slots in all): one key per name would let a few bulk writes of a thousand
# names exhaust it ("out of shared memory"). With buckets a transaction holds at most this
# many, at the price of unrelated names of one bucket waiting for each other (short writes).
BUCKETS = 64


def advisory_key(namespace: str, name: str) -> int:
    """The signed 64-bit key (advisory locks take a bigint) that locks `name` in `namespace`:
    the namespace's own range of BUCKETS keys, one of them chosen by the name's hash."""
    def digest(text: str) -> int:
        return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=4).digest(), "big")

    return digest(namespace) * BUCKETS + digest(name) % BUCKETS


def advisory_locks(namespace: str, names: Iterable[str]) -> None:
    """Lock the names until the transaction ends; call it inside `transaction.atomic()`
    before reading or writing what they name."""
    statement = advisory_locks_statement(namespace, names)
    if statement is not None:
        prepared_rows(*statement)


def advisory_locks_statement(namespace: str, names: Iterable[str],
                             *more: tuple[str, Iterable[str]]) -> Statement | None:
    """The statement of `advisory_locks` (None: nothing to lock, or not PostgreSQL), for a
    writer that sends it with its reads (database.statements.statements_rows). All the names
    in one statement, in one ascending order of keys whatever their namespaces, so that
    writers taking several kinds at once cannot deadlock."""
    if connection.vendor != "postgresql":
        return None
    keys = sorted({advisory_key(kind, name)
                   for kind, kind_names in ((namespace, names), *more) for name in kind_names})
    if not keys:
        return None
    # The ordered subquery makes the locks be taken in key order.
    return ("SELECT count(pg_advisory_xact_lock(key)) FROM "
            "(SELECT key FROM unnest(%s::bigint[]) AS key ORDER BY key) AS ordered", [keys])
