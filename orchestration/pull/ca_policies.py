"""The flexible store's consumer check (issue 33, docs/flexible-store.md): with
CONSUMER_AUTHORIZATION_FILTER, a candidate whose provider has not granted the consumer its
service (each requested operation, or the service) in ConsumerAuthorization is not offered,
as the Java DynamicServiceOrchestration filters them (`authorizationManagement`/
`check-policies`, one call for every candidate)."""
from collections.abc import Sequence
from typing import Any

from clients.consumer_authorization import SYSTEM, policies_check
from clients.errors import PeerRefused
from conventions.exceptions import ExternalServerError


class PolicyCheckFailed(ExternalServerError):
    """ConsumerAuthorization refused the check or answered something we cannot use."""


def questions(consumer: str, pairs: Sequence[tuple[str, str]],
              operations: Sequence[str]) -> list[dict[str, Any]]:
    """The AuthorizationVerifyRequestDTOs for (provider, service definition) pairs: one per
    requested operation, or one for the whole service."""
    return [{"provider": provider, "consumer": consumer, "cloud": None,
             "targetType": "SERVICE_DEF", "target": definition, "scope": scope}
            for provider, definition in dict.fromkeys(pairs)
            for scope in (operations or (None,))]


def denied(consumer: str, pairs: Sequence[tuple[str, str]],
           operations: Sequence[str]) -> set[tuple[str, str]]:
    """The (provider, service definition) pairs ConsumerAuthorization does not grant the
    consumer: any question about the pair answered not granted, or left unanswered."""
    if not pairs:
        return set()
    try:
        answer = policies_check(questions(consumer, pairs, operations))
    except PeerRefused as refusal:
        raise PolicyCheckFailed(
            f"{SYSTEM} refused the policy check (HTTP {refusal.status_code} "
            f"{refusal.exception_type}): {refusal.message}") from refusal
    entries = answer.get("entries") if isinstance(answer, dict) else None
    if not isinstance(entries, list) or not all(
            isinstance(e, dict) and isinstance(e.get("provider"), str)
            and isinstance(e.get("target"), str) for e in entries):
        raise PolicyCheckFailed(f"{SYSTEM} answered a malformed policy check response")
    granted = {(e.get("provider"), e.get("target")) for e in entries if e.get("granted") is True}
    refused = {(e.get("provider"), e.get("target")) for e in entries
               if e.get("granted") is not True}
    return {pair for pair in pairs if pair in refused or pair not in granted}
