"""The one HTTP exchange with another Arrowhead system: a JSON request with the headers the
Java clients send, over plain HTTP or TLS (trusting TLS_CA_FILE, presenting our certificate
when we have one), within a timeout. Proxy variables are ignored: the other systems are in the
local cloud, and a proxy must never see identity tokens. Every way of getting no answer at all
is clients.errors.Unreachable; what an answer means is the calling system module's to say."""
import http.client
import json
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.conf import settings

from clients.errors import Unreachable

_PROXYLESS = urllib.request.ProxyHandler({})


@dataclass(frozen=True)
class Reply:
    status: int
    raw: bytes

    def json(self) -> Any:
        """The parsed body, None without one; ValueError when it is not JSON."""
        return json.loads(self.raw) if self.raw.strip() else None


def exchange(method: str, url: str, *, body: Any = None, authorization: str | None = None,
             timeout: float) -> Reply:
    """One request and its answer, error statuses included. Raises Unreachable."""
    # The Java clients send these on every request, with or without a body (audit §0.1).
    headers = {"Accept": "application/json", "Content-Type": "application/json"}
    if authorization:
        headers["Authorization"] = authorization
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with opener(url.startswith("https:")).open(request, timeout=timeout) as response:
            return Reply(response.status, response.read())
    except urllib.error.HTTPError as error:
        try:
            return Reply(error.code, error.read())
        finally:
            error.close()
    except urllib.error.URLError as error:
        raise Unreachable(error.reason, timeout) from error
    except (OSError, http.client.HTTPException) as error:
        raise Unreachable(error, timeout) from error


@lru_cache(maxsize=2)
def opener(https: bool) -> urllib.request.OpenerDirector:
    """Plain HTTP, or HTTPS trusting TLS_CA_FILE (the system CAs without it) and presenting our
    certificate (TLS_CERT_FILE, TLS_KEY_FILE) when we have one."""
    if not https:
        return urllib.request.build_opener(_PROXYLESS)
    context = ssl.create_default_context(cafile=settings.TLS_CA_FILE or None)
    if settings.TLS_CERT_FILE:
        context.load_cert_chain(settings.TLS_CERT_FILE, settings.TLS_KEY_FILE)
    return urllib.request.build_opener(_PROXYLESS, urllib.request.HTTPSHandler(context=context))
