"""The usual subscribe call in one PostgreSQL statement (the consumer's own subscribe without
`trigger`): a new subscription inserted, or an existing one with the same notify interface
overwritten in place. Anything else (the notify interface changed, so the pending
notifications are cancelled; no room left for the target; the subscription inserted or
removed by a concurrent writer meanwhile; a new MQTT subscription, whose topic has to be
claimed for its target, subscriptions/notify_topics.py) is left to the transaction of
`subscriptions_upsert`, which answers it as before.

A new MQTT subscription is not inserted here because the statement reads from the snapshot
taken before it waits for any lock: a topic claimed meanwhile by another system's subscribe
would not be seen. An overwrite keeps its topic and target, so it claims nothing new.

Why: the general path (a lock, a locking read, a count, the write, each a round trip, and
the ORM's model machinery) was over half of a subscribe call's CPU in the fan-out bench's
profile (docs/performance.md, push fan-out, step 10).

Concurrent writers: the statement takes the subscription's advisory lock (the one
`subscriptions_upsert` holds from before its read until its commit) before it writes
anything: both of its writes read their rows from the lock's CTE, so no row reaches them
before the lock is held. The conditions, which read the statement's snapshot (taken before
waiting for the lock), can only be stale towards "write nothing": the UPDATE re-checks the
notify interface on the newest version of the row (READ COMMITTED), and `ON CONFLICT DO
NOTHING` gives way to a subscription inserted meanwhile. Nothing written: the general path
decides.
"""
import datetime as dt
import functools
import json
import uuid

from django.conf import settings
from django.db import connection
from rest_framework.utils.encoders import JSONEncoder

from database.advisory_locks import advisory_key
from database.prepared_statements import run_prepared
from subscriptions.models import LOCK_NAMESPACE, MQTT_PROTOCOLS, Subscription
from subscriptions.requests import SubscribeRequest

_COLUMNS = ("id", "owner", "target", "service_definition", "identity_key",
            "orchestration_request", "notify_protocol", "notify_properties", "duration",
            "expires_at", "needs_evaluation", "last_fingerprint", "last_pushed_at",
            "created_at", "updated_at")
# What an overwrite writes (the notify interface is the same).
_OVERWRITTEN = ("orchestration_request", "duration", "expires_at", "needs_evaluation",
                "last_fingerprint", "updated_at")


@functools.cache
def _statement() -> bytes:
    """The statement, with $n placeholders in `_COLUMNS` order, then the limit and the lock
    key, then whether it may insert; each cast to its column's type (parameters go as
    text)."""
    meta, quote = Subscription._meta, connection.ops.quote_name
    table = quote(meta.db_table)
    column = {name: quote(meta.get_field(name).column) for name in _COLUMNS}
    value = {name: f"${number}::{meta.get_field(name).db_type(connection)}"
             for number, name in enumerate(_COLUMNS, start=1)}
    limit, lock = f"${len(_COLUMNS) + 1}::integer", f"${len(_COLUMNS) + 2}::bigint"
    may_insert = f"${len(_COLUMNS) + 3}::boolean"
    assignments = ", ".join(f"{column[name]} = {value[name]}" for name in _OVERWRITTEN)
    return (
        f"WITH locked AS (SELECT pg_advisory_xact_lock({lock})),"
        f" updated AS ("
        f" UPDATE {table} SET {assignments} FROM locked"
        f" WHERE {column['identity_key']} = {value['identity_key']}"
        f" AND {column['notify_protocol']} = {value['notify_protocol']}"
        f" AND {column['notify_properties']} = {value['notify_properties']}"
        f" RETURNING {column['id']}),"
        f" inserted AS ("
        f" INSERT INTO {table} ({', '.join(column.values())})"
        f" SELECT {', '.join(value.values())} FROM locked"
        f" WHERE {may_insert} AND NOT EXISTS (SELECT FROM {table}"
        f" WHERE {column['identity_key']} = {value['identity_key']})"
        f" AND (SELECT count(*) FROM {table}"
        f" WHERE {column['target']} = {value['target']}) < {limit}"
        f" ON CONFLICT ({column['identity_key']}) DO NOTHING"
        f" RETURNING {column['id']})"
        f" SELECT {column['id']}, false FROM updated"
        f" UNION ALL SELECT {column['id']}, true FROM inserted").encode()


def _text(value: object) -> bytes | None:
    """A parameter as PostgreSQL's text input (None: NULL)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return b"t" if value else b"f"
    if isinstance(value, dt.datetime):
        return value.isoformat().encode()
    if isinstance(value, (dict, list)):
        return json.dumps(value).encode()
    return str(value).encode()


def subscription_write_at_once(*, owner: str, subscribe: SubscribeRequest, key: str,
                               expires_at: dt.datetime | None, now: dt.datetime,
                               baseline: str) -> tuple[uuid.UUID, bool] | None:
    """(id, created) when the one statement wrote the subscription, flagged for evaluation
    and starting from `baseline` (subscriptions/services/subscribing.py
    `subscription_baseline`); None when the
    general path has to decide (always on other databases than PostgreSQL)."""
    if connection.vendor != "postgresql":
        return None
    values = {
        "id": uuid.uuid4(), "owner": owner, "target": subscribe.target,
        "service_definition": subscribe.service_definition, "identity_key": key,
        # Stored as the general path stores it: the request as sent, JSON-encoded by DRF's rules.
        "orchestration_request": json.dumps(subscribe.raw_request, cls=JSONEncoder),
        "notify_protocol": subscribe.protocol, "notify_properties": subscribe.properties,
        "duration": subscribe.duration, "expires_at": expires_at, "needs_evaluation": True,
        "last_fingerprint": baseline, "last_pushed_at": None, "created_at": now, "updated_at": now}
    parameters = [_text(values[name]) for name in _COLUMNS]
    parameters += [_text(settings.MAX_SUBSCRIPTIONS_PER_SYSTEM),
                   _text(advisory_key(LOCK_NAMESPACE, key)),
                   _text(subscribe.protocol not in MQTT_PROTOCOLS)]
    rows = run_prepared(b"subscription_write_at_once", _statement(), parameters)
    if not rows:
        return None
    [[subscription_id, created]] = rows
    return uuid.UUID(subscription_id.decode()), created == b"t"
