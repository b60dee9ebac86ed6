"""Readiness (`GET /serviceorchestration/monitor/health`; docs/operations.md): the database (and
whether every migration is applied), the Celery broker when configured, and whatever the apps
register (observability/registry.py: the MQTT broker is the notifications app's).

Each dependency is asked in a thread of its own with HEALTH_TIMEOUT_SECONDS to answer, so a
hung one costs the probe that long and no more and does not hide the others. A result is
reused for REUSE_SECONDS: a flood of probes opens no more connections than one a second does."""
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

from celery import current_app
from django.conf import settings
from django.core.signals import setting_changed
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.dispatch import receiver

from observability.registry import HealthCheck, health_checks

UP, DOWN = "UP", "DOWN"
REUSE_SECONDS = 1.0


def _database(deadline: float) -> dict[str, str]:
    """One round trip on a connection of this check's own (it proves that connecting works,
    not just that a pooled connection still does), then the migration plan."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        unapplied = _unapplied_migrations()
    finally:
        connection.close()
    return {"migrations": f"{unapplied} not applied"} if unapplied else {}


_migrated = threading.Event()  # once applied, they stay applied until the code changes


def _unapplied_migrations() -> int:
    if _migrated.is_set():
        return 0
    executor = MigrationExecutor(connection)
    unapplied = len(executor.migration_plan(executor.loader.graph.leaf_nodes()))
    if not unapplied:
        _migrated.set()
    return unapplied


def _celery_broker(deadline: float) -> dict[str, str]:
    """The project's Celery app (config/celery.py), as Celery knows it in every thread."""
    timeout = settings.HEALTH_TIMEOUT_SECONDS
    with current_app.connection_for_write(connect_timeout=timeout) as broker:
        broker.ensure_connection(max_retries=0, timeout=timeout)  # one attempt
    return {}


def _checks() -> dict[str, HealthCheck]:
    checks: dict[str, HealthCheck] = {"database": _database}
    if settings.CELERY_BROKER_URL:
        checks["celeryBroker"] = _celery_broker
    return {**checks, **health_checks()}


def _component(check: HealthCheck) -> dict[str, str]:
    try:
        details = check(time.monotonic() + settings.HEALTH_TIMEOUT_SECONDS)
    except Exception as error:  # noqa: BLE001 (any failure of a dependency is its DOWN)
        text = " ".join(str(error).split())[:300]
        return {"status": DOWN,
                "error": f"{type(error).__name__}: {text}" if text else type(error).__name__}
    return {"status": DOWN, **details} if details else {"status": UP}


def _measure() -> dict:
    checks = _checks()
    timeout = settings.HEALTH_TIMEOUT_SECONDS
    pool = ThreadPoolExecutor(max_workers=len(checks), thread_name_prefix="health")
    try:
        futures = {name: pool.submit(_component, check) for name, check in checks.items()}
        deadline = time.monotonic() + timeout
        components = {}
        for name, future in futures.items():
            try:
                components[name] = future.result(max(0.0, deadline - time.monotonic()))
            except FutureTimeout:
                components[name] = {"status": DOWN, "error": f"no answer within {timeout:g} s"}
    finally:
        pool.shutdown(wait=False)  # a hung check ends with its own timeout, unwaited for
    status = UP if all(c["status"] == UP for c in components.values()) else DOWN
    return {"status": status, "components": components}


_lock = threading.Lock()
_last: tuple[float, dict] | None = None


def health() -> dict:
    """The current health, `{status, components}` (UP when every component is), measured at
    most once per REUSE_SECONDS in this process."""
    global _last
    with _lock:
        if _last is None or time.monotonic() - _last[0] >= REUSE_SECONDS:
            _last = (time.monotonic(), _measure())
        return _last[1]


@receiver(setting_changed)
def _forget(**kwargs: object) -> None:
    """Settings changed (tests do it): the dependencies to ask may have, too."""
    global _last
    with _lock:
        _last = None
