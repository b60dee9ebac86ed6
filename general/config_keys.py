"""The public configuration keys of get-config (reference-simple §6.14) and where each value
comes from here: ONE table, documented in docs/general-management.md. Only these keys are ever
answered; secrets (database URL, passwords, SECRET_KEY, tokens) have no entry and never will.

A value is read when asked, from the setting named, or from `getattr` with the default for
settings this service does not have yet (they are picked up once they exist)."""
from collections.abc import Callable, Iterable

from django.conf import settings


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(item) for item in value)
    return str(value)


def _setting(name: str, default: object = None) -> Callable[[], str]:
    return lambda: _text(getattr(settings, name, default))


def _fixed(value: object) -> Callable[[], str]:
    return lambda: _text(value)


def _domain_name() -> str:
    return _text(getattr(settings, "SERVICE_ADDRESS", "") or settings.HOST)


PUBLIC_KEYS: dict[str, Callable[[], str]] = {
    "server.address": _setting("HOST"),
    "server.port": _setting("PORT"),
    # No MQTT request/response API (yet): false until a MQTT_API_ENABLED setting exists.
    "mqtt.api.enabled": _setting("MQTT_API_ENABLED", False),
    # The address other systems reach this one at: SERVICE_ADDRESS once it exists, else HOST.
    "domain.name": _domain_name,
    "authentication.policy": _setting("AUTHENTICATION_POLICY"),
    # Our management check always runs on /mgmt/ paths (config.auth.ManagementPermission).
    "enable.management.filter": _fixed(True),
    # Our names: sysop-only, whitelist, permission (the reference's authorization, answered by
    # Django permissions instead of ConsumerAuthorization).
    "management.policy": _setting("MANAGEMENT_POLICY"),
    "enable.blacklist.filter": _setting("BLACKLIST_ENABLED", False),
    "force.blacklist.filter": _setting("BLACKLIST_FORCE", True),
    # Provider addresses may be loopback and link-local, private and other non-routable ones
    # (store.addresses): both allowed, as the reference's defaults.
    "allow.self.addressing": _setting("ALLOW_SELF_ADDRESSING", True),
    "allow.non.routable.addressing": _setting("ALLOW_NON_ROUTABLE_ADDRESSING", True),
    "max.page.size": _setting("MAX_PAGE_SIZE"),
    "normalization.mode": _setting("NORMALIZATION_MODE"),
    # The reference's default is two quote characters (a Java annotation slip): empty here.
    "service.address.alias": _setting("SERVICE_ADDRESS_ALIAS", ""),
}


def public_config(keys: Iterable[str]) -> dict[str, str]:
    """The values of the public keys among `keys` (unknown keys are left out)."""
    return {key: PUBLIC_KEYS[key]() for key in keys if key in PUBLIC_KEYS}
