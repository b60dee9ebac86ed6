"""Readiness (`monitor/health`): 200 when the database answers with every migration applied and
the configured brokers accept us; 503 naming what does not, while echo (liveness) stays 200.
Dependencies that are down are real: a database that does not exist, one never migrated,
ports nothing listens on, a broker that accepts TCP and never answers."""
import json
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest
from django.db import connection

from tests.endpoints import SilentTcpServer
from tests.ports import reserved_port
from tests.web_server import gunicorn
from tests.worker import _database_url

pytestmark = pytest.mark.django_db(transaction=True)

HEALTH = "/serviceorchestration/monitor/health"
ECHO = "/serviceorchestration/monitor/echo"


def get(port: int, path: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


class InProcessTests:
    def test_everything_up_is_200_with_each_configured_dependency(self, client, settings):
        response = client.get(HEALTH)
        assert response.status_code == 200
        assert response.json() == {"status": "UP", "components": {
            "database": {"status": "UP"}, "celeryBroker": {"status": "UP"},
            "mqttBroker": {"status": "UP"}}}

    def test_dependencies_not_configured_are_not_asked(self, client, settings):
        settings.CELERY_BROKER_URL = ""
        settings.MQTT_BROKER_URL = ""
        assert client.get(HEALTH).json() == {"status": "UP",
                                             "components": {"database": {"status": "UP"}}}

    def test_a_broker_that_refuses_is_named_with_its_error(self, client, settings):
        settings.MQTT_BROKER_URL = f"mqtt://127.0.0.1:{reserved_port()}"
        response = client.get(HEALTH)
        assert response.status_code == 503
        body = response.json()
        assert body["status"] == "DOWN" and body["components"]["database"] == {"status": "UP"}
        assert body["components"]["mqttBroker"]["status"] == "DOWN"
        assert "Connection refused" in body["components"]["mqttBroker"]["error"]

    def test_a_broker_that_never_answers_costs_the_timeout_and_probes_share_it(
            self, client, settings):
        silent = SilentTcpServer()
        try:
            settings.MQTT_BROKER_URL = f"mqtt://127.0.0.1:{silent.port}"
            settings.HEALTH_TIMEOUT_SECONDS = 0.5
            with ThreadPoolExecutor(20) as pool:
                statuses = list(pool.map(lambda _: client.get(HEALTH).status_code, range(40)))
            assert statuses == [503] * 40
            assert 1 <= silent.accepted <= 3  # one measurement per second, whoever asks
        finally:
            silent.close()

    def test_it_needs_no_identity_under_any_policy(self, client, settings):
        settings.AUTHENTICATION_POLICY = "token"
        assert client.get(HEALTH).status_code == 200


@pytest.fixture
def unmigrated_database():
    """An empty database on the test server, dropped afterwards."""
    name = f"so_health_{reserved_port()}"
    url = connection.settings_dict
    admin = psycopg.connect(host=url["HOST"] or "127.0.0.1", port=url["PORT"] or 5432,
                            user=url["USER"], dbname="postgres", autocommit=True)
    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgres://{url['USER']}@{url['HOST'] or '127.0.0.1'}:{url['PORT'] or 5432}/{name}"
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


class ServerTests:
    def test_a_missing_database_and_dead_brokers_are_each_named(self, tmp_path):
        silent = SilentTcpServer()
        env = {"DATABASE_URL": _database_url("so_health_no_such_database"),
               "CELERY_BROKER_URL": f"redis://127.0.0.1:{reserved_port()}/0",
               "MQTT_BROKER_URL": f"mqtt://127.0.0.1:{silent.port}",
               "HEALTH_TIMEOUT_SECONDS": "1"}
        try:
            with gunicorn(env, tmp_path / "gunicorn.log") as port:
                status, body = get(port, HEALTH)
                assert get(port, ECHO) == (200, b"Got it!")  # alive, not ready
        finally:
            silent.close()
        assert status == 503
        components = json.loads(body)["components"]
        assert {name: c["status"] for name, c in components.items()} == {
            "database": "DOWN", "celeryBroker": "DOWN", "mqttBroker": "DOWN"}
        assert "does not exist" in components["database"]["error"]

    def test_unapplied_migrations_are_not_ready(self, unmigrated_database, tmp_path):
        env = {"DATABASE_URL": unmigrated_database, "CELERY_BROKER_URL": "",
               "MQTT_BROKER_URL": ""}
        with gunicorn(env, tmp_path / "gunicorn.log") as port:
            status, body = get(port, HEALTH)
        assert status == 503
        database = json.loads(body)["components"]["database"]
        assert database["status"] == "DOWN"
        assert database["migrations"].endswith(" not applied")
        assert int(database["migrations"].split()[0]) > 10
