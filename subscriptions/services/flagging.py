"""The evaluation flags (models.py `EvaluationFlag`): setting them for the subscriptions a
change concerns or a subscribe wrote, and clearing them once evaluated.

Why no flag set after an evaluation's previews is lost (docs/subscriptions.md, "When a
push happens"): every writer of a flag holds its subscription's row lock when it writes
it. The round that flags (`flags_set`) locks the subscriptions in id order first, as the
UPDATE of a flag column did; an evaluation (evaluation.py `subscriptions_evaluate`) holds
the locks of its batch from before its previews until its commit, and clears the flags it
evaluated last. So a round flagging a subscription being evaluated waits for that commit
and then inserts the flag again (the row the evaluation deleted is gone by then: ON
CONFLICT finds nothing to conflict with), and the subscription is evaluated again. The
same id order keeps concurrent rounds from deadlocking."""
from collections.abc import Sequence
from uuid import UUID

from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import QuerySet

from database.expressions import AnyOf
from database.statements import Statement, placeholders
from subscriptions.models import EvaluationFlag, Subscription


def flags_set(due: QuerySet[Subscription]) -> None:
    """Flag the subscriptions of `due` (one statement): lock them in id order, then insert
    their flags, those already flagged left as they are. Inside a transaction."""
    locked = due.select_for_update().order_by("pk").values("pk")
    try:
        sql, params = locked.query.get_compiler(connection=connection).as_sql()
    except EmptyResultSet:  # e.g. `target__in` an empty set: nothing to flag
        return
    with connection.cursor() as cursor:
        # SQLite reads `ON` after a plain SELECT as a join's; a WHERE or ORDER BY ends it.
        cursor.execute(f"{_insert()} {sql} ON CONFLICT DO NOTHING", params)


def flags_set_statement(identity_keys: Sequence[str]) -> Statement:
    """The statement that flags the subscriptions of `identity_keys`, for a writer that
    has just written them (subscribing.py `subscriptions_upsert`: it holds their locks)."""
    subscription = Subscription._meta
    quote = connection.ops.quote_name
    return (f"{_insert()} SELECT {quote(subscription.pk.column)} "
            f"FROM {quote(subscription.db_table)} "
            f"WHERE {quote(subscription.get_field('identity_key').column)} "
            f"IN ({placeholders(len(identity_keys))}) ON CONFLICT DO NOTHING",
            list(identity_keys))


def flags_clear(ids: Sequence[UUID]) -> None:
    """Clear the flags of the subscriptions `ids` (evaluated, or pushed: their locks held)."""
    if ids:
        EvaluationFlag.objects.filter(AnyOf("pk", ids)).delete()


def _insert() -> str:
    quote = connection.ops.quote_name
    return (f"INSERT INTO {quote(EvaluationFlag._meta.db_table)} "
            f"({quote(EvaluationFlag._meta.pk.column)})")
