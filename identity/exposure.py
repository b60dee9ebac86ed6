"""Which identity policy a serving process runs with, and whether it may run with it where it
listens (issue 29, item 3; docs/identity.md "Production").

Under the `declared` policy a caller names itself (`Bearer SYSTEM//Sysop`): anyone who reaches
the service can manage everything. The web process (config/gunicorn.py) and the MQTT interface
(`manage.py mqtt_api`) therefore refuse to start with it on an address other hosts can reach,
unless IDENTITY_DECLARED_ON_NETWORK=true says the network is closed, and both name the policy
in force when they start."""
import ipaddress
import logging
import socket

from django.conf import settings

DECLARED = "declared"
ALLOW_SETTING = "IDENTITY_DECLARED_ON_NETWORK"


def is_loopback(host: str) -> bool:
    """Whether `host` (an IP address or a name, IPv6 with or without brackets) only ever means
    this machine: every address it resolves to is a loopback address. Wildcards (`0.0.0.0`,
    `::`, empty), other addresses and names that do not resolve are not."""
    host = host.strip().strip("[]")
    if not host:
        return False
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return False
    return bool(infos) and all(_is_loopback_address(info[4][0]) for info in infos)


def _is_loopback_address(text: str) -> bool:
    address = ipaddress.ip_address(text.split("%", 1)[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    return address.is_loopback


def declared_refusal(address: str, host: str) -> str | None:
    """The one line a process listening (or, for the MQTT interface, taking requests) at
    `address` refuses to start with, or None when it may start: a policy other than declared,
    a loopback `host`, or IDENTITY_DECLARED_ON_NETWORK=true."""
    if settings.AUTHENTICATION_POLICY != DECLARED or settings.IDENTITY_DECLARED_ON_NETWORK \
            or is_loopback(host):
        return None
    return (f"Refusing to start: AUTHENTICATION_POLICY=declared on the non-loopback address "
            f"{address} lets anyone who reaches it claim any system name, Sysop included. Use "
            f"AUTHENTICATION_POLICY=token or certificate (docs/identity.md), or set "
            f"{ALLOW_SETTING}=true if only trusted systems can reach {address} (unsafe)")


def proxied_refusal(address: str, host: str) -> str | None:
    """gunicorn trusts the client certificate nginx passes in a header (identity/certificates.py):
    it refuses to listen where another host could send that header itself."""
    if is_loopback(host):
        return None
    return (f"Refusing to start: gunicorn on the non-loopback address {address} would trust a "
            f"client certificate header anyone there can send; it listens behind nginx, on a "
            f"Unix socket or loopback only (docs/deployment.md)")


def policy_record(address: str, host: str) -> tuple[int, str]:
    """The start-up line naming the identity policy in force (and what it trusts), with its
    logging level: a WARNING for declared on a non-loopback address (then only allowed by
    IDENTITY_DECLARED_ON_NETWORK=true), else INFO."""
    policy = settings.AUTHENTICATION_POLICY
    line = f"Identity policy: {policy} ({_policy_basis(policy)})"
    if policy == DECLARED and not is_loopback(host):
        return logging.WARNING, (f"{line}; on the non-loopback address {address}, allowed by "
                                 f"{ALLOW_SETTING}=true: anyone who reaches it can claim any "
                                 "system name")
    return logging.INFO, line


def _policy_basis(policy: str) -> str:
    if policy == "token":
        return "identity tokens issued by this service"
    if policy == "outsourced":
        where = settings.AUTHENTICATION_SERVICE_URL or "found through the ServiceRegistry"
        return f"identity tokens verified by the Authentication system, {where}"
    if policy == "certificate":
        return f"TLS client certificates chaining to {settings.TLS_CA_FILE}"
    return "callers name themselves; for closed networks and development only"
