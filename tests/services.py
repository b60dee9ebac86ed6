"""Checks that the external services the tests talk to are up (PostgreSQL, Redis, the MQTT
broker): `require_postgres`, `require_redis`, `require_mqtt`. A test that needs one which is
down fails with a message naming it (it never skips). `make test` (tests/run_with_services.py)
makes them reachable before pytest starts: these checks catch a run started otherwise or a
server that went away. Not the app's write services
(`store/services/`, `subscriptions/services/`); the test endpoints (HTTP sink, MQTT
receiver, throw-away brokers) are in tests/endpoints.py."""
import socket
from urllib.parse import urlsplit

import pytest
from django.conf import settings


def _tcp_reachable(host: str, port: int) -> str | None:
    try:
        socket.create_connection((host, port), timeout=3).close()
    except OSError as exc:
        return str(exc)
    return None


def require_postgres() -> None:
    db = settings.DATABASES["default"]
    if "postgresql" not in db["ENGINE"]:
        pytest.fail(
            "The tests run against PostgreSQL, but DATABASE_URL points to "
            f"{db['ENGINE']}; run them with `make test` or set DATABASE_URL=postgres://...",
            pytrace=False,
        )
    host, port = db.get("HOST") or "127.0.0.1", int(db.get("PORT") or 5432)
    error = _tcp_reachable(host, port)
    if error:
        pytest.fail(
            f"PostgreSQL is not reachable at {host}:{port} ({error}); run the tests with "
            "`make test`, which starts one where none answers (docs/testing.md)",
            pytrace=False,
        )


def require_redis(url: str) -> None:
    """The Celery broker of the tests (a real Redis)."""
    from urllib.parse import urlparse

    parsed = urlparse(url)
    if parsed.scheme != "redis":
        pytest.fail(f"These tests need a real Celery broker; CELERY_BROKER_URL is {url!r}. "
                    "Run them with `make test`.", pytrace=False)
    host, port = parsed.hostname or "127.0.0.1", parsed.port or 6379
    error = _tcp_reachable(host, port)
    if error:
        pytest.fail(f"Redis is not reachable at {host}:{port} ({error}); run the tests "
                    "with `make test`, which starts one where none answers (docs/testing.md)",
                    pytrace=False)


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def mqtt_broker() -> tuple[str, int]:
    """Host and port of MQTT_BROKER_URL, which must be a loopback address: the tests never
    reach beyond this machine."""
    parts = urlsplit(settings.MQTT_BROKER_URL)
    host, port = parts.hostname or "", parts.port or 1883
    if parts.scheme != "mqtt" or host not in LOOPBACK:
        pytest.fail(
            f"The notification tests need a plain mqtt:// broker on a loopback address, but "
            f"MQTT_BROKER_URL is {settings.MQTT_BROKER_URL!r}; run them with `make test` or "
            "set MQTT_BROKER_URL=mqtt://127.0.0.1:1883",
            pytrace=False,
        )
    return host, port


def require_mqtt() -> tuple[str, int]:
    """The broker's host and port, once a TCP connection to it has succeeded."""
    host, port = mqtt_broker()
    try:
        socket.create_connection((host, port), timeout=3).close()
    except OSError as exc:
        pytest.fail(
            f"Mosquitto (MQTT broker) is not reachable at {host}:{port} ({exc}); run the "
            "tests with `make test`, which starts one where none answers (docs/testing.md)",
            pytrace=False,
        )
    return host, port
