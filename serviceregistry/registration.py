"""Registration in the ServiceRegistry at start-up (a background thread, retried with backoff
until it succeeds) and revocation at shutdown (best effort, within
SERVICE_REGISTRY_REVOKE_SECONDS), run by the gunicorn master (config.gunicorn `when_ready`,
`on_exit`); docs/local-cloud.md "When it happens" and "Revocation"."""
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings

from clients import serviceregistry as registry
from clients.identity import identity_token_source
from clients.serviceregistry import ServiceRegistryUnavailable, ServiceRegistryUnreachable
from identity.outsourced import own_identity_token
from serviceregistry import published

_logger = logging.getLogger("serviceorchestration.serviceregistry")


class Registration:
    def __init__(self, log: Any = _logger) -> None:
        self.log = log  # gunicorn's logger in the master (Django's logging is not set up there)
        self.instance_ids: list[str] = []
        self.system_registered = False
        self.done = threading.Event()
        self._stopping = threading.Event()
        # Held while the thread works (only its backoff waits are outside). The master forks
        # workers only while it holds this lock too (`_hold_for_fork`): a worker must not
        # inherit a lock the thread held at the moment of the fork (an import, a login, a
        # logging handler), which would deadlock the worker. Revocation takes it as well, so
        # that it never runs while a registration call is under way.
        self.busy = threading.Lock()
        self._ready: Callable[[], bool] | None = None

    def start(self, ready: Callable[[], bool] | None = None) -> None:
        """`ready` tells when the master has forked its first workers: until then the thread
        waits, so that those forks never wait for a registration call."""
        self._ready = ready
        threading.Thread(target=self._run, name="serviceregistry-registration",
                         daemon=True).start()

    def _run(self) -> None:
        waited = 0
        while self._ready is not None and not self._ready() and waited < 200:
            if self._stopping.wait(0.05):
                return
            waited += 1
        delay = settings.SERVICE_REGISTRY_RETRY_MIN_SECONDS
        attempt = 1
        while True:
            with self.busy:
                if self._stopping.is_set() or self._attempt(attempt, delay):
                    return
            self._stopping.wait(delay)
            delay = min(delay * 2, settings.SERVICE_REGISTRY_RETRY_MAX_SECONDS)
            attempt += 1

    def _attempt(self, attempt: int, delay: float) -> bool:
        """One registration; whether it is done."""
        try:
            self._register()
        except ServiceRegistryUnavailable as error:
            self.log.warning("ServiceRegistry registration failed (attempt %d): %s; "
                             "retrying in %g s", attempt, error.message, delay)
            return False
        self.done.set()
        self.log.info("Registered %s with %d services in the ServiceRegistry at %s",
                      settings.SYSTEM_NAME, len(self.instance_ids),
                      settings.SERVICE_REGISTRY_URL)
        return True

    def _register(self) -> None:
        registry.system_revoke()
        self.system_registered = False
        self.instance_ids.clear()
        registry.system_register(published.system_register_body())
        self.system_registered = True
        for body in published.service_register_bodies():
            self.instance_ids.append(registry.service_register(body))

    def revoke(self) -> None:
        """Stop registering, then revoke what was registered; never longer than
        SERVICE_REGISTRY_REVOKE_SECONDS, never raises."""
        deadline = time.monotonic() + settings.SERVICE_REGISTRY_REVOKE_SECONDS
        self._stopping.set()
        if not self.busy.acquire(timeout=settings.SERVICE_REGISTRY_REVOKE_SECONDS):
            self.log.warning("ServiceRegistry revocation skipped: a registration call did not "
                             "finish in time")
            return
        try:
            revoked = self._revoke_until(deadline)
        finally:
            self.busy.release()
        if revoked is not None:
            self.log.info("Revoked %d services and the system %s in the ServiceRegistry",
                          revoked, settings.SYSTEM_NAME)

    def _revoke_until(self, deadline: float) -> int | None:
        calls = [(registry.service_revoke, (instance_id,)) for instance_id in self.instance_ids]
        if self.system_registered:
            calls.append((registry.system_revoke, ()))
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
            revoked += call is registry.service_revoke
        return revoked


_registration: Registration | None = None
_held_for_fork: Registration | None = None


def _hold_for_fork() -> None:
    global _held_for_fork
    if _registration is not None:
        _registration.busy.acquire()
        _held_for_fork = _registration


def _release_after_fork() -> None:
    global _held_for_fork
    if _held_for_fork is not None:
        _held_for_fork.busy.release()
        _held_for_fork = None


def _forget_in_child() -> None:
    """A worker neither registers nor revokes: that is the master's."""
    global _registration, _held_for_fork
    _registration = _held_for_fork = None


os.register_at_fork(before=_hold_for_fork, after_in_parent=_release_after_fork,
                    after_in_child=_forget_in_child)


def start_registration(log: Any = _logger,
                       ready: Callable[[], bool] | None = None) -> Registration | None:
    """Register in the background when a ServiceRegistry is configured (else nothing)."""
    global _registration
    if not settings.SERVICE_REGISTRY_URL:
        return None
    # The master runs without Django's apps, so identity's ready() has not given it yet.
    identity_token_source(own_identity_token)
    _registration = Registration(log)
    log.info("Registering %s in the ServiceRegistry at %s", settings.SYSTEM_NAME,
             settings.SERVICE_REGISTRY_URL)
    _registration.start(ready)
    return _registration


def revoke_registration() -> None:
    """Revoke what start_registration registered (nothing when standalone)."""
    global _registration
    registration, _registration = _registration, None
    if registration is not None:
        registration.revoke()
