"""Which network addresses HTTP(S) notifications may go to (issue 29, item 2): public ones,
and those of the networks NOTIFY_HTTP_ALLOWED_NETWORKS lists. Loopback, link-local, private,
shared (100.64.0.0/10), reserved, multicast and unspecified addresses, and this service's own
addresses, are refused otherwise; this service's own API (its address and PORT) always.

Checked at subscribe time (subscriptions/notify_targets.py) and again before every connection
(notifications/http_connections.py), which connects to the very addresses checked here: a name that
resolves elsewhere later (DNS rebinding) cannot lead a send to an address the check refused.
"""
import functools
import ipaddress
import socket

from django.conf import settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
SETTING_HINT = "see NOTIFY_HTTP_ALLOWED_NETWORKS"
_WILDCARDS = ("", "0.0.0.0", "::")


class DestinationRefused(Exception):
    """A notify destination this policy refuses: retrying cannot help."""


def resolve_host(host: str) -> list[str]:
    """The addresses `host` resolves to, in the resolver's order: an IP address in any form the
    system's resolver reads (`0x7f000001`, `2130706433`, `0177.0.0.1`, `127.1`) to its address
    without DNS, a name through the system's resolver (files, then DNS). socket.gaierror when
    it does not resolve. The one place that resolves (tests replace it)."""
    infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def allowed_addresses(host: str, port: int) -> list[str]:
    """Every address `host` resolves to, when this policy allows each of them for `port`;
    otherwise DestinationRefused naming the first one refused and why. OSError
    (socket.gaierror) when `host` does not resolve."""
    addresses = resolve_host(host)
    for address in addresses:
        reason = refusal(address, port)
        if reason is not None:
            shown = (f"{host} is {reason}" if _same(host, address)
                     else f"{host} resolves to {address}, {reason}")
            raise DestinationRefused(f"Notify address {shown}")
    return addresses


def _same(host: str, address: str) -> bool:
    """Whether `host` is `address` written in the standard way (::ffff:7f00:1 for
    ::ffff:127.0.0.1 included)."""
    try:
        return ipaddress.ip_address(host) == ipaddress.ip_address(address)
    except ValueError:
        return False


def refusal(address: str, port: int) -> str | None:
    """Why this policy refuses `address` (an IP address, as resolve_host gives it) on `port`,
    as the rest of a sentence ("a loopback address; see ..."), or None when it allows it."""
    ip = ipaddress.ip_address(address.partition("%")[0])  # no zone id: fe80::1%eth0
    own = _is_own(ip)
    if own and port == settings.PORT:
        return f"this service's own address and port {port} (its own API)"
    if any(form in network for form in {ip, _unmapped(ip)}
           for network in settings.NOTIFY_HTTP_ALLOWED_NETWORKS):
        return None
    kind = _kind(ip)
    if kind is None and own:
        kind = "one of this service's own addresses"
    return None if kind is None else f"{kind}; {SETTING_HINT}"


def _unmapped(ip: IPAddress) -> IPAddress:
    """The IPv4 address of an IPv4-mapped IPv6 one (::ffff:127.0.0.1 is 127.0.0.1), else `ip`."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def _kind(ip: IPAddress) -> str | None:
    """What kind of non-public address `ip` is, or None for a public one."""
    ip = _unmapped(ip)
    if ip.is_unspecified:
        return "an unspecified address"
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_multicast:
        return "a multicast address"
    if ip == ipaddress.IPv4Address("255.255.255.255"):
        return "the broadcast address"
    if ip.is_private:
        return "a private address"
    if not ip.is_global:  # shared (100.64.0.0/10), reserved
        return "not a public address"
    return None


def _is_own(ip: IPAddress) -> bool:
    """Whether this service listens on or is reached at `ip`: HOST (with a wildcard HOST every
    loopback address and the addresses of this machine's host name) and SERVICE_ADDRESS."""
    ip, host = _unmapped(ip), settings.HOST.strip("[]")
    if host in _WILDCARDS and ip.is_loopback:
        return True
    return ip in _own_addresses(host, settings.SERVICE_ADDRESS)


@functools.lru_cache(maxsize=8)
def _own_addresses(host: str, service_address: str) -> frozenset[IPAddress]:
    """HOST's and SERVICE_ADDRESS's addresses (this machine's host name's for a wildcard HOST),
    resolved once per process; names that do not resolve add nothing."""
    names = {service_address, socket.gethostname() if host in _WILDCARDS else host}
    addresses: set[IPAddress] = set()
    for name in names:
        try:
            resolved = resolve_host(name.strip("[]"))
        except (OSError, UnicodeError):
            continue
        addresses |= {_unmapped(ipaddress.ip_address(address.partition("%")[0]))
                      for address in resolved}
    return frozenset(addresses)
