"""`manage.py ensure_database` (`make run`, `make mqtt-api`, before `migrate`): create the
PostgreSQL database DATABASE_URL names when it does not exist yet, so that a fresh machine
needs nothing but a running server (docs/deployment.md)."""
import psycopg
from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError
from django.db import DEFAULT_DB_ALIAS, connections
from psycopg import sql

# Where CREATE DATABASE is sent from, with DATABASE_URL's credentials (as `createdb` does).
MAINTENANCE_DATABASE = "postgres"


class Command(BaseCommand):
    help = "Create DATABASE_URL's PostgreSQL database if it is missing (nothing for SQLite)."
    requires_system_checks = []

    def handle(self, *args, **options) -> None:
        connection = connections[DEFAULT_DB_ALIAS]
        if connection.vendor != "postgresql":
            return  # SQLite creates its file on first use
        try:
            params = connection.get_connection_params()
        except ImproperlyConfigured as error:
            raise CommandError(str(error)) from None
        name = params["dbname"]
        try:
            psycopg.connect(**params).close()
            return
        except psycopg.OperationalError as error:
            unreachable = _one_line(error)
        created = _create(params, name, unreachable)
        try:  # it exists now: made here or by another process meanwhile
            psycopg.connect(**params).close()
        except psycopg.OperationalError as error:  # it was there, but refuses us
            raise CommandError(f"Cannot connect to database {name}: {_one_line(error)}") \
                from None
        if created:
            self.stdout.write(f"Created database {name}")


def _create(params: dict, name: str, unreachable: str) -> bool:
    """CREATE DATABASE `name` through the maintenance database; False when it exists (another
    process created it since our first connection, or that connection failed for another
    reason: the caller's next connection tells). Any failure is a CommandError saying why."""
    try:
        with psycopg.connect(**{**params, "dbname": MAINTENANCE_DATABASE},
                             autocommit=True) as maintenance:
            if maintenance.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                                   [name]).fetchone():
                return False
            maintenance.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except (psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation):
        # Created by another process meanwhile: after our existence check (42P04), or while
        # both were copying the template, when the second insert into pg_database meets the
        # first's row in its unique index (23505 on pg_database_datname_index).
        return False
    except psycopg.OperationalError:  # the server is away (or refuses this user)
        raise CommandError(f"Cannot connect to database {name}: {unreachable}") from None
    except psycopg.Error as error:  # e.g. the user may not create databases
        raise CommandError(f"Database {name} does not exist and cannot be created: "
                           f"{_one_line(error)}") from None
    return True


def _one_line(error: Exception) -> str:
    return " ".join(str(error).split())
