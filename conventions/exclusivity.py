"""`allowExclusivity`, the service instance metadata that says how long a consumer may reserve
the instance (reference-dynamic, reservations). The store checks it when an instance is written,
pull reads it when it reserves one; it is defined here, below both."""

ALLOW_EXCLUSIVITY = "allowExclusivity"
MAX_EXCLUSIVITY_SECONDS = 2_147_483_647


def exclusivity_seconds(metadata: dict | None) -> int | None:
    """The `allowExclusivity` metadata as seconds: an integer or its string form; None when
    absent or not of that form."""
    value = (metadata or {}).get(ALLOW_EXCLUSIVITY)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        return int(value.strip())
    return None
