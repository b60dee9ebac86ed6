"""Throw-away PostgreSQL databases on the tests' server, for processes that create their own
(`manage.py ensure_database`, run by `make run`)."""
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote

import psycopg
from django.db import connection
from psycopg import sql

from tests.worker import _database_url


@contextmanager
def maintenance() -> Iterator[psycopg.Connection]:
    """An autocommit connection to the server's `postgres` database, as the tests' user."""
    with psycopg.connect(**{**connection.get_connection_params(), "dbname": "postgres"},
                         autocommit=True) as maintenance_connection:
        yield maintenance_connection


def database_exists(name: str) -> bool:
    with maintenance() as server:
        return server.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                              [name]).fetchone() is not None


@contextmanager
def throwaway_database(name: str) -> Iterator[str]:
    """The URL of database `name`, which does not exist on entry (a failed run's is dropped)
    and is dropped on exit, with any connection left to it."""
    drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
    with maintenance() as server:
        server.execute(drop)
    try:
        yield _database_url(quote(name, safe=""))
    finally:
        with maintenance() as server:
            server.execute(drop)
