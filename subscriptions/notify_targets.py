"""Where a subscription's notifications go, checked at subscribe time (issue 10 item 11), so
that a subscription which could never be delivered is refused instead of retried forever.

HTTP addresses go through the catalog's address rules (store.addresses); the MQTT rules are
those of MQTT 3.1.1/5 for a topic one publishes to (§4.7: UTF-8, at most 65,535 bytes, no
wildcards, no U+0000; `$` topics belong to the broker).
"""
import ipaddress
import unicodedata

from conventions.exceptions import InvalidParameter
from notifications import address_policy
from store.addresses import detect_address_type, parse_interface_address

MAX_TOPIC_BYTES = 65_535
# Control (incl. NUL, CR, LF), format (bidi overrides, zero-width), surrogate and separator
# characters: never part of a host name, an HTTP request line or a sensible topic.
_CONTROL_CATEGORIES = frozenset({"Cc", "Cf", "Cs"})
_SPACE_CATEGORIES = frozenset({"Zs", "Zl", "Zp"})


def _has_any(text: str, categories: frozenset[str]) -> bool:
    return any(unicodedata.category(char) in categories for char in text)


def mqtt_topic(topic: str) -> str:
    if _has_any(topic, _CONTROL_CATEGORIES):
        raise InvalidParameter("Notify property topic should not contain control or format "
                               "characters")
    if len(topic.encode("utf-8")) > MAX_TOPIC_BYTES:
        raise InvalidParameter(f"Notify property topic should not be longer than "
                               f"{MAX_TOPIC_BYTES} bytes (UTF-8)")
    if "+" in topic or "#" in topic:
        raise InvalidParameter("Notify property topic should not contain the wildcards + or #")
    if topic.startswith("$"):
        raise InvalidParameter("Notify property topic should not start with $ (reserved for "
                               "the broker)")
    return topic


def http_address(address: str) -> str:
    """The canonical host of an HTTP(S) notify target: a lower-case (IDNA-encoded) host name,
    an IPv4 address or a compressed IPv6 address (brackets optional)."""
    if _has_any(address, _CONTROL_CATEGORIES | _SPACE_CATEGORIES):
        raise InvalidParameter("Notify property address should not contain spaces, control or "
                               "format characters")
    if address.startswith("[") and address.endswith("]") and ":" in address:
        address = address[1:-1]
    if not address.isascii():
        try:
            address = address.encode("idna").decode("ascii")
        except UnicodeError:
            raise InvalidParameter("Notify property address is not a valid internationalized "
                                   "domain name") from None
    try:
        normalized = parse_interface_address(address)
    except InvalidParameter as error:
        raise InvalidParameter(f"Notify property address: {error.message}") from None
    if detect_address_type(normalized) == "IPV6":
        return ipaddress.IPv6Address(normalized).compressed
    return normalized


def http_destination_allowed(address: str, port: int) -> None:
    """Refuse a destination the notification address policy refuses
    (notifications/address_policy.py: loopback, link-local, private, this service's own
    addresses, unless NOTIFY_HTTP_ALLOWED_NETWORKS allows them; every address a name resolves
    to must be allowed). A name that does not resolve now is accepted: nothing can be said
    about it yet, and every send checks it again before connecting."""
    try:
        address_policy.allowed_addresses(address, port)
    except address_policy.DestinationRefused as refused:
        raise InvalidParameter(str(refused)) from None
    except (OSError, UnicodeError):
        pass  # does not resolve (now)


def http_path(path: str) -> str:
    """The request path, `/` prepended when missing (the transport would add it anyway)."""
    if _has_any(path, _CONTROL_CATEGORIES | _SPACE_CATEGORIES):
        raise InvalidParameter("Notify property path should not contain spaces, control or "
                               "format characters")
    if not path.isascii():
        raise InvalidParameter("Notify property path should contain ASCII characters only "
                               "(percent-encode the others)")
    return path if path.startswith("/") else f"/{path}"
