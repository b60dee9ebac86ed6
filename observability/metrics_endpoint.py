"""`GET /metrics` (docs/metrics.md, "The endpoint"): the event metrics and the state read from
the database now, in the text format or OpenMetrics as the scraper's Accept header asks. Not an
Arrowhead operation: no system identity, not in the OpenAPI document."""
import hmac
from collections.abc import Iterator

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from prometheus_client import REGISTRY
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from api.errors import error_response
from api.views import no_such_endpoint
from conventions.exceptions import AuthError, InvalidParameter
from observability.metrics_state import StateCollector

TOKEN_MISSING = "The metrics need `Authorization: Bearer <METRICS_TOKEN>`"


@csrf_exempt  # as every API view: a POST is answered 405 (or as an unknown path), not 403
def metrics(request: HttpRequest) -> HttpResponse:
    if not settings.METRICS_ENABLED:
        return no_such_endpoint(request)  # not a 401: off, there is nothing to log in to
    if request.method not in ("GET", "HEAD"):
        response = error_response(request, 405, InvalidParameter.exception_type,
                                  f'Method "{request.method}" not allowed.')
        response["Allow"] = "GET, HEAD"
        return response
    if settings.METRICS_TOKEN and not _token_presented(request, settings.METRICS_TOKEN):
        response = error_response(request, 401, AuthError.exception_type, TOKEN_MISSING)
        response["WWW-Authenticate"] = "Bearer"
        return response
    encode, content_type = choose_encoder(request.headers.get("Accept", ""))
    return HttpResponse(encode(_Scrape()), content_type=content_type)


def _token_presented(request: HttpRequest, token: str) -> bool:
    scheme, _, presented = request.headers.get("Authorization", "").partition(" ")
    # Compared in constant time: the answer's timing tells nothing about the token.
    return scheme.lower() == "bearer" and hmac.compare_digest(presented.strip().encode(),
                                                              token.encode())


class _Scrape:
    """What one scrape shows: the event metrics, summed over this host's processes from
    METRICS_DIR (or this process's own when there is none: tests), then the state."""

    def collect(self) -> Iterator[Metric]:
        events: Collector = MultiProcessCollector(None, path=settings.METRICS_DIR) \
            if settings.METRICS_DIR else REGISTRY
        yield from events.collect()
        yield from StateCollector().collect()
