"""The calls the Blacklist system offers us (reference-dynamic §9.5), found and called like
every peer (clients.peers: BLACKLIST_URL or the ServiceRegistry): `blacklistDiscovery`/`check`
of one system name, and `blacklistManagement`/`query`, one page of entries. Whom to ask, what
to keep and what a failure means is identity's (identity/blacklist.py). Both raise
PeerUnavailable (also for an answer of the wrong shape) or PeerRefused."""
from typing import Any

from clients.peers import PeerOperation, PeerService, PeerUnavailable, call

BLACKLIST_SYSTEM = "Blacklist"
BLACKLIST_DISCOVERY = PeerService(
    system=BLACKLIST_SYSTEM, definition="blacklistDiscovery", url_setting="BLACKLIST_URL",
    base_path="/blacklist", operations={"lookup": PeerOperation("GET", "/lookup"),
                                        "check": PeerOperation("GET", "/check")})
BLACKLIST_MANAGEMENT = PeerService(
    system=BLACKLIST_SYSTEM, definition="blacklistManagement", url_setting="BLACKLIST_URL",
    base_path="/blacklist/mgmt", operations={"query": PeerOperation("POST", "/query"),
                                             "create": PeerOperation("POST", "/create"),
                                             "remove": PeerOperation("DELETE", "/remove")})


def check(name: str) -> bool:
    """Whether the Blacklist lists `name` now."""
    answer = call(BLACKLIST_DISCOVERY, "check", path_params=(name,))
    if not isinstance(answer, bool):
        raise PeerUnavailable(f"{BLACKLIST_DISCOVERY.label('check')} answered no boolean")
    return answer


def query(body: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
    """One page of a BlacklistEntryListRequestDTO query: its entries and the total count."""
    answer = call(BLACKLIST_MANAGEMENT, "query", body=body)
    entries = answer.get("entries") if isinstance(answer, dict) else None
    count = answer.get("count") if isinstance(answer, dict) else None
    if not isinstance(entries, list) or type(count) is not int or not all(
            isinstance(entry, dict) and isinstance(entry.get("systemName"), str)
            for entry in entries):
        raise PeerUnavailable(f"{BLACKLIST_MANAGEMENT.label('query')} answered no entry list")
    return entries, count
