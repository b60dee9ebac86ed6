"""The Blacklist filter (BLACKLIST_FILTER; reference-dynamic §9.5, audit §2 "Blacklist
filter"; docs/identity.md "Blacklist", which says who is asked about, how answers are kept
and what a failure does): is the requester blacklisted (`check`, asked by
`BlacklistPermission`), and which of these providers are (`query`, asked by the pull before
anything is reserved). The calls are clients.blacklist.
"""
import logging
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from clients import blacklist
from clients.blacklist import BLACKLIST_SYSTEM
from clients.errors import PeerRefused, PeerUnavailable
from conventions.exceptions import Forbidden
from conventions.names import normalize_system_name
from conventions.timestamps import format_utc

logger = logging.getLogger("serviceorchestration.blacklist")

UNAVAILABLE = "Blacklist system is not available, the system might be blacklisted"
_PASSED_THROUGH = (401, 403)  # the Java filter rethrows AuthException and ForbiddenException
_CHECK_KEY = "blacklist:check:"
_LISTED_KEY = "blacklist:listed:"


def excluded(name: str) -> bool:
    """BLACKLIST_EXCLUDE names systems the filter never asks about (the core systems)."""
    return name in {normalize_system_name(entry) for entry in settings.BLACKLIST_EXCLUDE}


def _passed_through(error: PeerUnavailable | PeerRefused) -> bool:
    return isinstance(error, PeerRefused) and error.status_code in _PASSED_THROUGH


# --- asking the Blacklist ---------------------------------------------------------------------

def is_blacklisted(name: str) -> bool:
    """`check` of one system name, kept for BLACKLIST_CACHE_SECONDS. Raises PeerUnavailable
    or PeerRefused."""
    cached = cache.get(_CHECK_KEY + name)
    if cached is not None:
        return cached
    answer = blacklist.check(name)
    cache.set(_CHECK_KEY + name, answer, settings.BLACKLIST_CACHE_SECONDS)
    return answer


def blacklisted_among(names: Iterable[str]) -> set[str]:
    """The names that appear in a Blacklist entry alive now. Names answered within the last
    BLACKLIST_CACHE_SECONDS are not asked again; the rest are asked in one paged query.
    Raises PeerUnavailable or PeerRefused."""
    wanted = sorted(set(names))
    cached = cache.get_many([_LISTED_KEY + name for name in wanted])
    listed = {name for name in wanted if cached.get(_LISTED_KEY + name)}
    unknown = [name for name in wanted if _LISTED_KEY + name not in cached]
    if unknown:
        found = {entry["systemName"] for entry in _query_all(unknown)} & set(unknown)
        cache.set_many({_LISTED_KEY + name: name in found for name in unknown},
                       settings.BLACKLIST_CACHE_SECONDS)
        listed |= found
    return listed


def _query_all(names: list[str]) -> list[dict[str, Any]]:
    """Every entry about `names`, as the reference pages: the first page with page and size
    null (the Blacklist's default page), then pages 1, 2, … of the first page's size."""
    entries: list[dict[str, Any]] = []
    page = size = None
    alives_at = format_utc(timezone.now())
    while True:
        body = {"pagination": {"page": page, "size": size, "direction": None, "sortField": None},
                "systemNames": names, "mode": None, "issuers": None, "revokers": None,
                "reason": None, "alivesAt": alives_at}
        page_entries, count = blacklist.query(body)
        entries.extend(page_entries)
        if not page_entries or len(entries) >= count:
            return entries
        page, size = (1, len(page_entries)) if page is None else (page + 1, size)


# --- the filter -------------------------------------------------------------------------------

def requester_check(name: str) -> None:
    """Refuse a blacklisted requester (403), or, when the Blacklist cannot tell and
    BLACKLIST_FORCE is on, every requester."""
    try:
        blacklisted = is_blacklisted(name)
    except (PeerUnavailable, PeerRefused) as error:
        if _passed_through(error):
            raise
        logger.warning("Blacklist check of %s failed: %s", name, error.message)
        if settings.BLACKLIST_FORCE:
            raise Forbidden(UNAVAILABLE) from error
        return
    if blacklisted:
        raise Forbidden(f"{name} system is blacklisted")


def providers_allowed(names: Iterable[str]) -> set[str]:
    """Of these provider names, the ones the pull may offer: all but the listed ones (the
    names in BLACKLIST_EXCLUDE are not asked about). When the Blacklist cannot tell: none with
    BLACKLIST_FORCE, else all. A 401 or 403 of the Blacklist is raised as it came."""
    names = set(names)
    asked = {name for name in names if not excluded(name)}
    if not asked:
        return names
    try:
        return names - blacklisted_among(asked)
    except (PeerUnavailable, PeerRefused) as error:
        if _passed_through(error):
            raise
        logger.warning("Blacklist query of the providers failed: %s", error.message)
        return set() if settings.BLACKLIST_FORCE else names


class BlacklistPermission(BasePermission):
    """Every request with an identity, when BLACKLIST_FILTER is on: blacklisted requesters get
    403 `<name> system is blacklisted`. Operators, the Blacklist itself and BLACKLIST_EXCLUDE
    are not asked about. Views without an identity (echo, schema) set their own
    permission_classes and never get here."""

    def has_permission(self, request: Request, view: object) -> bool:
        requester = request.user
        if not settings.BLACKLIST_FILTER or not getattr(requester, "is_authenticated", False) \
                or getattr(requester, "is_operator", False):
            return True
        name = requester.name
        if name != BLACKLIST_SYSTEM and not excluded(name):
            requester_check(name)
        return True
