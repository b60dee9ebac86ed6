"""Django's `migrate`, run by one process at a time per PostgreSQL database: `make run` and
`make mqtt-api` (the Procfile, compose.yaml, several hosts) migrate at start, and two
migrations of a fresh database at once fail on the tables both create. The later one waits,
then finds nothing left to apply (docs/deployment.md)."""
from django.core.management.commands import migrate
from django.db import connections

from database.advisory_locks import advisory_key

LOCK = advisory_key("migrate", "schema")


class Command(migrate.Command):
    def handle(self, *args, **options) -> None:
        connection = connections[options["database"]]
        if connection.vendor != "postgresql":  # SQLite: one writer at a time anyway
            return super().handle(*args, **options)
        # A session lock: held across the migrations' own transactions.
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [LOCK])
        try:
            return super().handle(*args, **options)
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [LOCK])
