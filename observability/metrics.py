"""Prometheus metrics of events (docs/metrics.md), counted where they happen, by one call each.
With METRICS_ENABLED the settings have pointed prometheus_client at METRICS_DIR before this
module is imported, so each process of the host writes its counts to files there; off, the
counts stay in memory and nothing shows them (a few increments on rare events, one per pull).
"""
from collections.abc import Iterable, Sized
from contextlib import ContextDecorator
from datetime import datetime
from types import TracebackType
from typing import Protocol

from prometheus_client import Counter, Histogram

PREFIX = "serviceorchestration"

# Seconds. A pull takes about a millisecond on an idle server, tens of milliseconds under load.
REQUEST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                   10.0)
# Seconds from a notification's creation until it was delivered: from a send at once (about
# the subscription coalescing second) to hours of retries.
DELIVERY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0,
                    7200.0)

REQUESTS = Counter(
    f"{PREFIX}_requests_total",
    "Requests answered, by route (the URL pattern; `unknown` for every path no operation "
    "serves) and status code.", ["route", "status"])
REQUEST_DURATION = Histogram(
    f"{PREFIX}_request_duration_seconds",
    "Time from a request reaching the application to its answer, by route and status class.",
    ["route", "status_class"], buckets=REQUEST_BUCKETS)
PULLS = Counter(
    f"{PREFIX}_pulls_total",
    "Pulls by outcome: found (results), empty (none), rejected (a 4xx answer), failed (5xx).",
    ["outcome"])
OUTBOUND_CALLS = Counter(
    f"{PREFIX}_outbound_calls_total",
    "Calls to other Arrowhead systems by outcome: ok, or failed (the system was not found, "
    "not reached, refused the call or gave no usable answer; the log says which).",
    ["system", "operation", "outcome"])
DELIVERIES = Counter(
    f"{PREFIX}_notification_deliveries_total",
    "Notification deliveries by the outcome their sender recorded: delivered; failed "
    "(permanently: refused, or expired before it could be sent); retried (failed for now, "
    "attempted again after a backoff); superseded (a newer notification of its subscription "
    "is sent instead).", ["protocol", "outcome"])
DELIVERY_LATENCY = Histogram(
    f"{PREFIX}_notification_delivery_seconds",
    "Time from a notification's creation (the change that caused it) to its delivery, by "
    "notify protocol.", ["protocol"], buckets=DELIVERY_BUCKETS)

_PULL_FOUND, _PULL_EMPTY = PULLS.labels("found"), PULLS.labels("empty")
_PULL_REJECTED, _PULL_FAILED = PULLS.labels("rejected"), PULLS.labels("failed")


def request_series(route: str, status: int) -> tuple[Counter, Histogram]:
    """The counter and histogram children of one route and status, to be kept and reused."""
    return (REQUESTS.labels(route, status),
            REQUEST_DURATION.labels(route, f"{status // 100}xx"))


def pull_answered(results: Sized | None) -> None:
    (_PULL_FOUND if results else _PULL_EMPTY).inc()


def pull_refused(status: int) -> None:
    (_PULL_FAILED if status >= 500 else _PULL_REJECTED).inc()


class outbound_call(ContextDecorator):  # noqa: N801 - reads as the `with` statement it makes
    """Counts the call to another Arrowhead system it wraps (a `with` block or, with fixed
    labels, a decorated function): ok when it returns, failed when it raises (the error goes
    on). Stateless once made, so one decorator serves every thread."""

    def __init__(self, system: str, operation: str) -> None:
        self._ok = OUTBOUND_CALLS.labels(system, operation, "ok")
        self._failed = OUTBOUND_CALLS.labels(system, operation, "failed")

    def __enter__(self) -> "outbound_call":
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        (self._ok if error is None else self._failed).inc()


class Recorded(Protocol):
    protocol: str
    created_at: datetime


# A delivery's status as its sender records it → the outcome counted. PENDING is counted only
# after an attempt: without one it is waiting for an older send of its subscription.
_OUTCOMES = {"DELIVERED": "delivered", "FAILED": "failed", "PENDING": "retried",
             "CANCELLED": "superseded"}


def deliveries_recorded(deliveries: Iterable[Recorded], status: str, now: datetime, *,
                        attempted: bool = True) -> None:
    """Count deliveries whose sender has just recorded `status` at `now`; for DELIVERED also
    observe how long each took since its creation."""
    if status == "PENDING" and not attempted:
        return
    outcome = _OUTCOMES[status]
    for delivery in deliveries:
        DELIVERIES.labels(delivery.protocol, outcome).inc()
        if outcome == "delivered":
            DELIVERY_LATENCY.labels(delivery.protocol).observe(
                (now - delivery.created_at).total_seconds())
