"""Network addresses of provider service interfaces (`accessAddresses`), Arrowhead 5 style.

An address is first normalized (lower-cased, trimmed, MACs and IPv6 brought to one canonical
spelling), then its type is detected from that spelling alone, then it is validated against
the rules of its type. Everything here is pure string work: hostnames are never resolved.
"""
import ipaddress
import re

from conventions.exceptions import InvalidParameter

ADDRESS_TYPES: tuple[str, ...] = ("HOSTNAME", "IPV4", "IPV6", "MAC")

MAX_ADDRESS_LENGTH = 1024
MAX_HOSTNAME_LENGTH = 253
FAILURE = "Address verification failure: "

# The three spellings of a MAC address we accept; all collapse to colon-separated pairs.
_MAC_FORMS = (
    re.compile(r"[0-9a-f]{4}\.[0-9a-f]{4}\.[0-9a-f]{4}"),
    re.compile(r"([0-9a-f]{2}-){5}[0-9a-f]{2}"),
    re.compile(r"([0-9a-f]{2}:){5}[0-9a-f]{2}"),
)
_MAC = _MAC_FORMS[2]
_IPV6_FULL = re.compile(r"([0-9a-f]{4}:){7}[0-9a-f]{4}")
# At most three digits per octet, so that e.g. `0000000010.0.0.1` is not taken for an IPv4.
_IPV4_OCTET = re.compile(r"[0-9]{1,3}")
_HOST_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?")


def normalize_address(value: str) -> str:
    """The canonical spelling of `value`: what is stored and what type detection looks at."""
    address = value.strip().lower()
    if any(form.fullmatch(address) for form in _MAC_FORMS):
        hex_digits = re.sub(r"[.:-]", "", address)
        return ":".join(hex_digits[i:i + 2] for i in range(0, 12, 2))
    if ":" in address:
        # Both pure IPv6 and IPv6 with an embedded IPv4 (`::ffff:1.2.3.4`) end up here.
        return _expand_ipv6(address)
    # Dotted (IPv4 or host name) or separator-free values are already canonical.
    return address


def _expand_ipv6(address: str) -> str:
    # Zone ids (`fe80::1%eth0`) are meaningless to remote consumers: leave them unparsed so
    # that they fail validation as host names.
    if "%" in address:
        return address
    try:
        return ipaddress.IPv6Address(address).exploded
    except ValueError:
        return address


def detect_address_type(normalized: str) -> str:
    """The type of an already normalized address; anything unrecognized is a HOSTNAME."""
    if _MAC.fullmatch(normalized):
        return "MAC"
    if _is_dotted_quad(normalized):
        return "IPV4"
    if _IPV6_FULL.fullmatch(normalized):
        return "IPV6"
    return "HOSTNAME"


def _is_dotted_quad(address: str) -> bool:
    octets = address.split(".")
    return len(octets) == 4 and all(_IPV4_OCTET.fullmatch(o) and int(o) <= 255 for o in octets)


def _fail(reason: str) -> InvalidParameter:
    return InvalidParameter(FAILURE + reason)


def _validate_ipv4(address: str) -> None:
    first = int(address.split(".")[0])
    if address == "0.0.0.0":
        raise _fail(f"unspecified address is not allowed: {address}")
    if address == "255.255.255.255":
        raise _fail(f"broadcast address is not allowed: {address}")
    if 224 <= first <= 239:
        raise _fail(f"multicast address is not allowed: {address}")
    # Loopback (127/8) and link-local (169.254/16) stay allowed: this deployment runs on them.


def _validate_ipv6(address: str) -> None:
    if set(address) <= {"0", ":"}:
        raise _fail(f"unspecified address is not allowed: {address}")
    if address.startswith("ff"):
        raise _fail(f"multicast address is not allowed: {address}")
    # Loopback (::1) and link-local (fe80::/10) stay allowed, as for IPv4.


def _validate_hostname(address: str) -> None:
    if len(address) > MAX_HOSTNAME_LENGTH:
        raise _fail("host name is too long")
    labels = address.split(".")
    well_formed = all(len(label) <= 63 and _HOST_LABEL.fullmatch(label) for label in labels)
    # A letter in the first label keeps bogus dotted quads (`999.1.1.1`) from passing as names.
    if not well_formed or not any(c.isalpha() for c in labels[0]):
        raise _fail(f"invalid host name: {address}")


_VALIDATORS = {"HOSTNAME": _validate_hostname, "IPV4": _validate_ipv4, "IPV6": _validate_ipv6}


def parse_interface_address(value: str) -> str:
    """The normalized form of an interface's access address, checked by the rules of its
    detected type; MACs are not reachable addresses."""
    normalized = normalize_address(value)
    address_type = detect_address_type(normalized)
    if address_type == "MAC":
        raise InvalidParameter("Unacceptable address type in property value: MAC")
    if len(normalized) > MAX_ADDRESS_LENGTH:
        raise _fail("address is too long")
    _VALIDATORS[address_type](normalized)
    return normalized


def narrow_addresses(addresses: list[str], types: set[str]) -> list[str]:
    """The addresses (as given, in order) whose detected type is one of `types`."""
    wanted = {t.upper() for t in types}
    return [a for a in addresses if detect_address_type(normalize_address(a)) in wanted]
