"""Counts and times every request by its route (docs/metrics.md), when METRICS_ENABLED:
otherwise Django leaves this middleware out. The route label is the URL pattern, never the
path, so ids cannot multiply the series; paths no operation serves are `unknown`. Pull is the
hot path: per request two clock readings, one dict lookup and the two updates.
"""
import time
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import MiddlewareNotUsed
from django.http import HttpRequest, HttpResponse
from django.urls import Resolver404, ResolverMatch, resolve
from prometheus_client import Counter, Histogram

from api.views import NotFoundApi
from observability.metrics import request_series

UNKNOWN_ROUTE = "unknown"


class RequestMetricsMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        if not settings.METRICS_ENABLED:
            raise MiddlewareNotUsed
        self.get_response = get_response
        # (URL pattern, status) → the series to update; filled as they first occur (a dict
        # item assignment is atomic, so the request threads share it without a lock).
        self._series: dict[tuple[str | None, int], tuple[Counter, Histogram]] = {}

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        elapsed = time.perf_counter() - started
        match = request.resolver_match or _resolved(request)
        key = (match.route if match is not None else None, response.status_code)
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = request_series(_route_label(match),
                                                        response.status_code)
        series[0].inc()
        series[1].observe(elapsed)
        return response


def _resolved(request: HttpRequest) -> ResolverMatch | None:
    """The URL pattern of a request answered before its URL was resolved (the request
    guard's 400 and 413)."""
    try:
        return resolve(request.path_info)
    except Resolver404:
        return None


def _route_label(match: ResolverMatch | None) -> str:
    if match is None or getattr(match.func, "view_class", None) is NotFoundApi:
        return UNKNOWN_ROUTE
    return "/" + match.route
