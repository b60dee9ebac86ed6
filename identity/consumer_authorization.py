"""ConsumerAuthorization's answer to "may this system use that operation of ours", for
MANAGEMENT_POLICY=authorization (reference audit §2 "Management filter").

Asked with `authorization`/`verify` (POST /consumerauthorization/authorization/verify) as the
Java ManagementServiceFilter asks it: provider = SYSTEM_NAME, consumer = the requester, cloud
`LOCAL`, targetType `SERVICE_DEF`, target = the management service definition, scope = the
operation; the answer is a bare boolean. Answers, granted or not, are reused for
CONSUMER_AUTHORIZATION_CACHE_SECONDS, so that a management tool's burst costs one question.
"""
import hashlib

from django.conf import settings
from django.core.cache import cache

from api.operations import ServiceOperation
from clients.consumer_authorization import authorization_verify
from clients.errors import PeerRefused, PeerUnavailable

_CACHE_PREFIX = "ca-management:"


class ConsumerAuthorizationUnavailable(Exception):
    """ConsumerAuthorization could not be asked, or answered something else than a boolean."""


def management_granted(consumer: str, operation: ServiceOperation) -> bool:
    """Whether ConsumerAuthorization lets `consumer` use `operation` of this system.
    Raises ConsumerAuthorizationUnavailable."""
    # Names are validated, but hashing keeps the key short and free of cache-unsafe characters.
    text = f"{settings.SYSTEM_NAME}|{consumer}|{operation.service}|{operation.name}"
    key = _CACHE_PREFIX + hashlib.sha256(text.encode()).hexdigest()
    known = cache.get(key)
    if isinstance(known, bool):
        return known
    body = {"provider": settings.SYSTEM_NAME, "consumer": consumer, "cloud": "LOCAL",
            "targetType": "SERVICE_DEF", "target": operation.service, "scope": operation.name}
    try:
        answer = authorization_verify(body)
    except (PeerUnavailable, PeerRefused) as error:
        raise ConsumerAuthorizationUnavailable(error.message) from error
    if not isinstance(answer, bool):
        raise ConsumerAuthorizationUnavailable("ConsumerAuthorization authorization/verify "
                                               "answered no boolean")
    if settings.CONSUMER_AUTHORIZATION_CACHE_SECONDS:
        cache.set(key, answer, timeout=settings.CONSUMER_AUTHORIZATION_CACHE_SECONDS)
    return answer
