"""Checks that the real services the tests talk to are up; a test that needs one which is down
fails with a message naming it (it never skips)."""
import socket

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
            f"PostgreSQL is not reachable at {host}:{port} ({error}); start it with "
            "`pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`",
            pytrace=False,
        )
