"""Delivering a notification over HTTP(S): the subscriber's URL, the request with its method,
and what the answer (or the lack of one) means: a 2xx is a delivery, anything else a
TransportError, transient or not. The connections and the attempt's deadline:
notifications/http_connections.py."""
import json
import urllib.error
import urllib.request
from http.client import HTTPException, InvalidURL
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

from notifications import address_policy
from notifications.http_connections import AttemptDeadline, opener
from notifications.transport_errors import TransportError

# Status codes that mean "not now" rather than "never": retried like a connection error.
TRANSIENT_HTTP_STATUSES = frozenset({408, 429})


def http_url(protocol: str, properties: dict[str, Any]) -> str:
    """`<protocol>://<address>:<port><path>`, the address bracketed when it is IPv6."""
    address = str(properties.get("address") or "")
    port = _port(properties.get("port"))
    if not address:
        raise TransportError("HTTP notify interface has no address", transient=False)
    if ":" in address and not address.startswith("["):
        address = f"[{address}]"
    path = str(properties.get("path") or "/")
    if not path.startswith("/"):
        path = f"/{path}"
    return f"{protocol.lower()}://{address}:{port}{path}"


def _port(value: Any) -> int:
    try:
        port = int(value)
    except (TypeError, ValueError):
        port = 0
    if not 1 <= port <= 65535:
        raise TransportError(f"HTTP notify interface has no valid port: {value!r}",
                             transient=False)
    return port


def http_destination(protocol: str, properties: dict[str, Any]) -> str:
    """`host:port` of an HTTP(S) notify interface (the unit of the per-destination limit and
    circuit breaker), "" for MQTT or when the interface has no usable address."""
    if protocol.upper() not in ("HTTP", "HTTPS"):
        return ""
    try:
        url = urlsplit(http_url(protocol, properties))
        return f"{url.hostname}:{url.port}"
    except (TransportError, ValueError):
        return ""


# A connection that the destination accepted and then cut while the request went out or
# before any answer: what a database's or a broker's port does with an HTTP request.
_CUT_OFF = (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


def http_send(*, protocol: str, properties: dict[str, Any], payload: Any) -> None:
    """Send the body with the subscriber's method; a 2xx answer is a delivery."""
    request = _http_request(protocol, properties, payload)
    seconds = settings.NOTIFY_HTTP_CONNECT_TIMEOUT_SECONDS + settings.NOTIFY_HTTP_TIMEOUT_SECONDS
    deadline = AttemptDeadline(seconds)
    try:
        # The answer's status is all that counts; its body is not read (it could be endless).
        with deadline:
            opener.open(request, timeout=settings.NOTIFY_HTTP_TIMEOUT_SECONDS).close()
        if deadline.expired:  # a head cut off at the deadline can parse as a complete one
            raise OSError("the answer's head was cut off")
    except urllib.error.HTTPError as exc:
        exc.close()
        transient = exc.code >= 500 or exc.code in TRANSIENT_HTTP_STATUSES
        raise TransportError(f"{request.full_url} answered {exc.code} {exc.reason}",
                             transient=transient) from exc
    except InvalidURL as exc:  # e.g. control characters in the path
        raise TransportError(f"Invalid notify URL {request.full_url!r}: {exc}",
                             transient=False) from exc
    except address_policy.DestinationRefused as exc:  # checked before connecting
        raise TransportError(f"{request.full_url}: {exc}", transient=False) from exc
    except (urllib.error.URLError, HTTPException, OSError) as exc:  # refused, reset, timeout
        reason = getattr(exc, "reason", exc)
        not_http = not deadline.expired and isinstance(reason, (HTTPException, *_CUT_OFF))
        if deadline.expired:
            reason = f"no complete answer within {seconds} s ({reason})"
        elif not_http:  # the destination's bytes, escaped (NUL cannot be stored) and cut
            reason = f"not an HTTP answer ({type(reason).__name__}: {ascii(str(reason))[:200]})"
        raise TransportError(f"{request.full_url}: {reason}", transient=True,
                             not_http=not_http) from exc


def _http_request(protocol: str, properties: dict[str, Any],
                  payload: Any) -> urllib.request.Request:
    url = http_url(protocol, properties)
    method = str(properties.get("method") or "POST").upper()
    try:
        return urllib.request.Request(
            url,
            data=json.dumps(payload).encode(),
            method=method,
            headers={"Content-Type": "application/json", "Accept": "text/plain, application/json"},
        )
    except ValueError as exc:  # not a URL urllib can send to
        raise TransportError(f"Invalid notify URL {url!r}: {exc}", transient=False) from exc
