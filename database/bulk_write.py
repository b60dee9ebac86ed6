"""A transaction that writes rules for many consumers at once (an import) says so
(`bulk_write_declare`), and the change feed's rule triggers then record one change meaning
"everything" for the transaction instead of a row per consumer (orchestration/migrations/sql/
0010_feed_bulk_writes.postgresql.sql). Readers treat more than 20 000 changes at once as
everything anyway (the pull snapshot loads again, the subscriptions are all evaluated); what
the single row saves is the rows themselves: until the writing transaction commits, every
read of the feed by every pull stepped over its uncommitted rows, 11 ms a read with 90 000 of
them (docs/performance.md). PostgreSQL only: SQLite readers never see uncommitted rows."""
from django.db import connection

# More consumers than this in one write: a bulk write (the readers' limits: the pull
# snapshot's MAX_APPLIED_CHANGES and the subscriptions' FEED_READ_LIMIT).
BULK_WRITE_CONSUMERS = 20_000
SETTING = "serviceorchestration.bulk_write"


def bulk_write_declare() -> None:
    """For the rest of the current transaction (call it inside one; inside a savepoint, until
    the outermost transaction ends), rule writes record one change meaning everything."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config(%s, 'on', true)", [SETTING])
