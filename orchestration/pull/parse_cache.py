"""Parsed pull requests kept per request body (issue 14, docs/performance.md).

A consumer pulls with the same body again and again (its standing question), and parsing it
(JSON, the input gate, the type check, name normalization) is a tenth of a pull's CPU. So each
web process keeps the last MAX_ENTRIES parsed requests by body, and a pull whose body was seen
before skips the parse. Only successful parses are kept, and a request depends on nothing but
its body and the settings, so the kept value is exactly what parsing again would give; a
changed setting (tests) empties the cache. Bodies longer than MAX_BODY_BYTES are not kept.
"""
import threading
from collections import OrderedDict
from collections.abc import Callable

from django.core.signals import setting_changed
from django.dispatch import receiver
from rest_framework.request import Request

from orchestration.pull.types import OrchestrationRequest

MAX_ENTRIES = 4096
MAX_BODY_BYTES = 4096

_Key = tuple[str, str, bytes]
_parsed: OrderedDict[_Key, OrchestrationRequest] = OrderedDict()
_lock = threading.Lock()


def parsed_request(request: Request,
                   parse: Callable[[Request], OrchestrationRequest]) -> OrchestrationRequest:
    """The request's orchestration request: kept from an earlier pull with the same body
    (content type and length included, which decide how the body is read), else `parse`d."""
    meta = request.META
    length = meta.get("CONTENT_LENGTH") or ""
    if not length.isdigit() or int(length) > MAX_BODY_BYTES:
        return parse(request)
    key = (meta.get("CONTENT_TYPE", ""), length, request.body)
    with _lock:
        found = _parsed.get(key)
        if found is not None:
            _parsed.move_to_end(key)
            return found
    parsed = parse(request)  # raises for a body it refuses: nothing kept
    with _lock:
        _parsed[key] = parsed
        if len(_parsed) > MAX_ENTRIES:
            _parsed.popitem(last=False)
    return parsed


@receiver(setting_changed)
def _forget(**kwargs: object) -> None:
    with _lock:
        _parsed.clear()
