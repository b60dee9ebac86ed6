"""Log severities on the wire (reference-simple §6.13: log4j's names) and how Python's levels
map onto them. Each severity has a rank; "severity X" in a query means rank ≥ rank of X."""
import logging

from conventions.exceptions import InvalidParameter

# Wire name → rank (Python's numbers; TRACE below DEBUG). Ordered from least to most severe.
RANKS: dict[str, int] = {
    "TRACE": 5,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "ERROR": logging.ERROR,
    "FATAL": logging.CRITICAL,
}
# Accepted in the query besides the wire names: OFF (the reference's level that no entry has,
# so it matches nothing) and Python's own spellings of WARN and FATAL.
OFF = "OFF"
ALIASES = {"WARNING": "WARN", "CRITICAL": "FATAL"}
ALLOWED = (*RANKS, OFF)
INVALID_SEVERITY = ("Invalid severity is specified. Allowed values are: "
                    + ", ".join(ALLOWED))
SEVERITY_NAMES = (*ALLOWED, *ALIASES)  # every accepted spelling, upper case


def severity_of(levelno: int) -> str:
    """The wire severity of a Python level: the most severe one not above it (a custom level
    25 is INFO, 35 is WARN)."""
    severity = "TRACE"
    for name, rank in RANKS.items():
        if levelno >= rank:
            severity = name
    return severity


def minimum_rank(value: str | None) -> int | None:
    """The rank a `severity` filter asks for: None for no filter (absent or blank), a rank
    above every entry for OFF. Any case; surrounding blanks ignored."""
    if value is None or not value.strip():
        return None
    name = value.strip()
    if not name.isascii():  # "ınfo".upper() is "INFO"; only ASCII letters are accepted
        raise InvalidParameter(INVALID_SEVERITY)
    name = name.upper()
    name = ALIASES.get(name, name)
    if name == OFF:
        return RANKS["FATAL"] + 1
    if name not in RANKS:
        raise InvalidParameter(INVALID_SEVERITY)
    return RANKS[name]
