"""The public configuration keys of get-config (reference-simple §6.14): ONE table, each
value's source and why in docs/general-management.md. Only these keys are ever answered;
secrets (database URL, passwords, SECRET_KEY, tokens) have no entry and never will. A value is
read when asked, with the default given for settings this service does not have."""
from collections.abc import Callable, Iterable

from django.conf import settings


def _setting(name: str, default: object = None) -> Callable[[], str]:
    def text() -> str:
        value = getattr(settings, name, default)
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, (list, tuple)):
            return ",".join(str(item) for item in value)
        return str(value)

    return text


PUBLIC_KEYS: dict[str, Callable[[], str]] = {
    "server.address": _setting("HOST"),
    "server.port": _setting("PORT"),
    "mqtt.api.enabled": _setting("MQTT_API_ENABLED"),
    "domain.name": _setting("SERVICE_ADDRESS"),
    "authentication.policy": _setting("AUTHENTICATION_POLICY"),
    "enable.management.filter": lambda: "true",
    "management.policy": _setting("MANAGEMENT_POLICY"),
    "enable.blacklist.filter": _setting("BLACKLIST_FILTER"),
    "force.blacklist.filter": _setting("BLACKLIST_FORCE"),
    "allow.self.addressing": _setting("ALLOW_SELF_ADDRESSING", True),
    "allow.non.routable.addressing": _setting("ALLOW_NON_ROUTABLE_ADDRESSING", True),
    "max.page.size": _setting("MAX_PAGE_SIZE"),
    "normalization.mode": _setting("NORMALIZATION_MODE"),
    "service.address.alias": _setting("SERVICE_ADDRESS_ALIAS", ""),
    # Ours: the release running (the file VERSION).
    "application.version": _setting("PRODUCT_VERSION"),
}


def public_config(keys: Iterable[str]) -> dict[str, str]:
    """The values of the public keys among `keys` (unknown keys are left out)."""
    return {key: PUBLIC_KEYS[key]() for key in keys if key in PUBLIC_KEYS}
