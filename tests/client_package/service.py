"""The real service for the client's tests: gunicorn on loopback with the test database, no
Celery broker (the web process evaluates subscriptions and sends pushes), pushing to the MQTT
broker given (by default the tests' Mosquitto)."""
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings

from tests import services
from tests.web_server import gunicorn


@contextmanager
def client_service(log: Path, *, policy: str = "declared", mqtt: str | None = None,
                   managers: str = "") -> Iterator[str]:
    """The service's URL. `managers`: systems with management permission besides the
    operator (the provider examples register their own instance)."""
    if mqtt is None:
        services.require_mqtt()
    env = {"CELERY_BROKER_URL": "", "MQTT_BROKER_URL": mqtt or settings.MQTT_BROKER_URL,
           "AUTHENTICATION_POLICY": policy, "MANAGEMENT_POLICY": "permission",
           "MANAGEMENT_WHITELIST": managers, "SUBSCRIPTION_QUIET_SECONDS": "0.05",
           "SERVICE_REGISTRY_URL": None, "METRICS_ENABLED": "false"}
    with gunicorn(env, log) as port:
        yield f"http://127.0.0.1:{port}"
