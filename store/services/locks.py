"""Locks that make concurrent rule writers wait for each other in one fixed order instead of
deadlocking (PostgreSQL; SQLite has a single writer at a time and needs none).

A rule set is the rules of one (consumer, service definition): its priorities are unique, so
every writer of a rule set (create, modify priorities, remove) first takes the rule set's
transaction-scoped advisory lock, for all its rule sets in ascending key order. Row locks
cannot do this: a create's rows do not exist yet, and the unique index of the priorities is
deferrable, so two INSERTs of the same keys only check each other at the end of their
statements and then wait for each other ("deadlock detected").
"""
import hashlib
from collections.abc import Iterable

from django.db import connection

_NAMESPACE = b"rule-set"


def _rule_set_key(consumer: str, service_definition: str) -> int:
    """A stable signed 64-bit key (advisory locks take a bigint). Two rule sets sharing a key
    only wait for each other needlessly; the order stays total."""
    digest = hashlib.blake2b(f"{consumer}\0{service_definition}".encode(), digest_size=8,
                             person=_NAMESPACE).digest()
    return int.from_bytes(digest, "big", signed=True)


def rule_sets_lock(rule_sets: Iterable[tuple[str, str]]) -> None:
    """Lock the rule sets (consumer, service definition) until the transaction ends; call it
    inside `transaction.atomic()` before reading or writing their rules."""
    if connection.vendor != "postgresql":
        return
    keys = sorted({_rule_set_key(consumer, definition) for consumer, definition in rule_sets})
    if not keys:
        return
    with connection.cursor() as cursor:
        # One round trip; the ordered subquery makes the locks be taken in key order.
        cursor.execute("SELECT count(pg_advisory_xact_lock(key)) FROM "
                       "(SELECT key FROM unnest(%s::bigint[]) AS key ORDER BY key) AS ordered",
                       [keys])
