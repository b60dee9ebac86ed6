"""Registration in the ServiceRegistry at start-up and revocation at shutdown, run by the
gunicorn master (config.gunicorn `when_ready`, `on_exit`), so once however many workers serve.

Registration runs in a background thread and never delays serving: like the Java
`ApplicationInitListener`, it revokes our system (a leftover of an earlier run), registers it,
then registers each published service. Any failure starts over after a backoff that doubles
from SERVICE_REGISTRY_RETRY_MIN_SECONDS up to SERVICE_REGISTRY_RETRY_MAX_SECONDS, until it
succeeds, so a ServiceRegistry that comes up late gets the registration when it does.
Revocation withdraws every instance registered and the system, best effort, within
SERVICE_REGISTRY_REVOKE_SECONDS in total.
"""
import logging
import threading
import time
from typing import Any

from django.conf import settings

from serviceregistry import client, published
from serviceregistry.client import ServiceRegistryUnavailable, ServiceRegistryUnreachable

_logger = logging.getLogger("serviceorchestration.serviceregistry")


class Registration:
    def __init__(self, log: Any = _logger) -> None:
        self.log = log  # gunicorn's logger in the master (Django's logging is not set up there)
        self.instance_ids: list[str] = []
        self.system_registered = False
        self.done = threading.Event()
        self._stopping = threading.Event()
        # Held for each ServiceRegistry call of the registration, so that revocation never
        # runs while a registration call is under way (it would leave that instance behind).
        self._calls = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="serviceregistry-registration",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        delay = settings.SERVICE_REGISTRY_RETRY_MIN_SECONDS
        attempt = 1
        while not self._stopping.is_set():
            try:
                self._register()
            except ServiceRegistryUnavailable as error:
                if self._stopping.is_set():
                    return
                self.log.warning("ServiceRegistry registration failed (attempt %d): %s; "
                                 "retrying in %g s", attempt, error.message, delay)
                self._stopping.wait(delay)
                delay = min(delay * 2, settings.SERVICE_REGISTRY_RETRY_MAX_SECONDS)
                attempt += 1
            else:
                self.done.set()
                self.log.info("Registered %s with %d services in the ServiceRegistry at %s",
                              settings.SYSTEM_NAME, len(self.instance_ids),
                              settings.SERVICE_REGISTRY_URL)
                return

    def _register(self) -> None:
        self._locked(client.system_revoke)
        self.system_registered = False
        self.instance_ids.clear()
        self._locked(client.system_register, published.system_register_body())
        self.system_registered = True
        for body in published.service_register_bodies():
            self.instance_ids.append(self._locked(client.service_register, body))

    def _locked(self, call: Any, *args: Any) -> Any:
        with self._calls:
            if self._stopping.is_set():
                raise ServiceRegistryUnavailable("shutting down")
            return call(*args)

    def revoke(self) -> None:
        """Stop registering, then revoke what was registered; never longer than
        SERVICE_REGISTRY_REVOKE_SECONDS, never raises."""
        deadline = time.monotonic() + settings.SERVICE_REGISTRY_REVOKE_SECONDS
        self._stopping.set()
        if not self._calls.acquire(timeout=settings.SERVICE_REGISTRY_REVOKE_SECONDS):
            self.log.warning("ServiceRegistry revocation skipped: a registration call did not "
                             "finish in time")
            return
        try:
            revoked = self._revoke_until(deadline)
        finally:
            self._calls.release()
        if revoked is not None:
            self.log.info("Revoked %d services and the system %s in the ServiceRegistry",
                          revoked, settings.SYSTEM_NAME)

    def _revoke_until(self, deadline: float) -> int | None:
        calls = [(client.service_revoke, (instance_id,)) for instance_id in self.instance_ids]
        if self.system_registered:
            calls.append((client.system_revoke, ()))
        revoked = 0
        for call, args in calls:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.log.warning("ServiceRegistry revocation gave up: out of time")
                return None
            try:
                call(*args, timeout=min(remaining, settings.SERVICE_REGISTRY_TIMEOUT_SECONDS))
            except ServiceRegistryUnreachable as error:  # the others would fail alike
                self.log.warning("ServiceRegistry revocation given up: %s", error.message)
                return None
            except ServiceRegistryUnavailable as error:
                self.log.warning("ServiceRegistry revocation failed: %s", error.message)
                continue
            revoked += call is client.service_revoke
        return revoked


_registration: Registration | None = None


def start_registration(log: Any = _logger) -> Registration | None:
    """Register in the background when a ServiceRegistry is configured (else nothing)."""
    global _registration
    if not settings.SERVICE_REGISTRY_URL:
        return None
    _registration = Registration(log)
    log.info("Registering %s in the ServiceRegistry at %s", settings.SYSTEM_NAME,
             settings.SERVICE_REGISTRY_URL)
    _registration.start()
    return _registration


def revoke_registration() -> None:
    """Revoke what start_registration registered (nothing when standalone)."""
    global _registration
    registration, _registration = _registration, None
    if registration is not None:
        registration.revoke()
