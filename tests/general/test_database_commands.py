"""`manage.py ensure_database` (creates DATABASE_URL's database when missing) and `migrate`
(one process at a time), as `make run` runs them: against the real PostgreSQL, on throw-away
databases."""
import os
import subprocess
import sys

import pytest
from django.db import connection

from general.management.commands.ensure_database import _create
from tests import services
from tests.concurrency import run_together
from tests.databases import database_exists, maintenance, throwaway_database
from tests.ports import reserved_port
from tests.worker import ROOT

NAME = "so_deploy_ensure"


def _manage(database_url: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "DATABASE_URL": database_url})


@pytest.fixture(autouse=True)
def postgres() -> None:
    services.require_postgres()


class EnsureDatabaseTests:
    def test_it_creates_a_missing_database_once(self):
        with throwaway_database(NAME) as url:
            created = _manage(url, "ensure_database")
            assert (created.returncode, created.stdout, created.stderr) == \
                (0, f"Created database {NAME}\n", "")
            assert database_exists(NAME)
            again = _manage(url, "ensure_database")
            assert (again.returncode, again.stdout, again.stderr) == (0, "", "")
            migrated = _manage(url, "migrate", "--noinput")
            assert migrated.returncode == 0, migrated.stderr[-3000:]

    def test_concurrent_creations_of_one_database_all_succeed(self):
        """`make run` and `make mqtt-api` started together on a new database: every
        CREATE DATABASE but one fails, whether before copying the template (it exists) or
        after it (the unique index of database names), and each of those is "created by
        another process meanwhile"."""
        with throwaway_database(NAME):
            params = {**connection.get_connection_params(), "dbname": NAME}
            outcomes = run_together(*[lambda: _create(params, NAME, "") for _ in range(6)])
            assert sorted(outcomes, key=repr) == [False] * 5 + [True], outcomes
            assert database_exists(NAME)

    def test_a_database_created_by_another_process_since_the_first_connection_is_no_error(
            self):
        """The first connection found no database; by the time of the existence check another
        process has created it (the race `make run` and `make mqtt-api` run)."""
        with throwaway_database(NAME) as url:
            assert _manage(url, "ensure_database").returncode == 0  # the other process
            params = {**connection.get_connection_params(), "dbname": NAME}
            assert _create(params, NAME, "database does not exist") is False

    def test_processes_started_together_on_a_new_database_all_come_up(self):
        with throwaway_database(NAME) as url:
            processes = [subprocess.Popen(
                [sys.executable, "manage.py", "ensure_database"], cwd=ROOT, text=True,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                env={**os.environ, "DATABASE_URL": url}) for _ in range(4)]
            outputs = [process.communicate(timeout=300)[0] for process in processes]
        assert [process.returncode for process in processes] == [0] * 4, outputs
        assert sorted(outputs) == ["", "", "", f"Created database {NAME}\n"]

    def test_it_quotes_the_name(self):
        name = f'{NAME} "quoted"; DROP DATABASE postgres'
        with throwaway_database(name) as url:
            result = _manage(url, "ensure_database")
            assert result.returncode == 0, result.stderr
            assert database_exists(name) and database_exists("postgres")

    def test_it_does_nothing_for_sqlite(self, tmp_path):
        result = _manage(f"sqlite:///{tmp_path / 'db.sqlite3'}", "ensure_database")
        assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
        assert not (tmp_path / "db.sqlite3").exists()

    def test_it_explains_a_server_it_cannot_reach(self):
        result = _manage(f"postgres://postgres@127.0.0.1:{reserved_port()}/{NAME}",
                         "ensure_database")
        assert result.returncode == 1
        assert result.stderr.startswith(f"CommandError: Cannot connect to database {NAME}: ")
        assert "Connection refused" in result.stderr and "Traceback" not in result.stderr

    def test_it_explains_a_database_it_may_not_create(self):
        role = "so_deploy_no_createdb"
        with maintenance() as server, throwaway_database(NAME) as url:
            server.execute(f"DROP ROLE IF EXISTS {role}")
            server.execute(f"CREATE ROLE {role} LOGIN NOCREATEDB")
            try:
                result = _manage(url.replace("postgres@", f"{role}@", 1), "ensure_database")
            finally:
                server.execute(f"DROP ROLE {role}")
        assert result.returncode == 1
        assert result.stderr == (f"CommandError: Database {NAME} does not exist and cannot be "
                                 "created: permission denied to create database\n")
        assert not database_exists(NAME)


class MigrateTests:
    def test_two_migrations_of_a_fresh_database_at_once_both_succeed(self):
        with throwaway_database(NAME) as url:
            assert _manage(url, "ensure_database").returncode == 0
            processes = [subprocess.Popen(
                [sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, text=True,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                env={**os.environ, "DATABASE_URL": url}) for _ in range(2)]
            outputs = [process.communicate(timeout=300)[0] for process in processes]
        assert [process.returncode for process in processes] == [0, 0], outputs
        # The one that waited found everything applied by the other.
        assert sorted("No migrations to apply." in output for output in outputs) == [False, True]
