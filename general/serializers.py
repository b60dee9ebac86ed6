"""Wire shapes of general management (reference-simple §6.13, §6.14)."""
from typing import Any

from rest_framework import serializers

from api.fields import PYTHON_BLANKS, StrictCharField, documented, pagination_field
from api.name_fields import accepted_instant_pattern
from api.schema import BLANK_REFUSED
from general.selectors import SORTING
from general.severities import RANKS, SEVERITY_NAMES


class LogEntrySerializer(serializers.Serializer):
    """One stored log record. Like the reference's LogEntryDTO, an empty message and a missing
    exception are left out."""

    logId = serializers.CharField(source="id", help_text="Decimal digits; grows with every "
                                  "entry.")
    entryDate = serializers.DateTimeField(source="entry_date")
    logger = serializers.CharField()
    severity = serializers.ChoiceField(choices=list(RANKS))
    message = serializers.CharField(required=False)
    exception = serializers.CharField(required=False, help_text="The traceback, if any.")

    def to_representation(self, instance: Any) -> dict:
        data = super().to_representation(instance)
        return {key: value for key, value in data.items() if value not in (None, "")}


class LogListSerializer(serializers.Serializer):
    entries = LogEntrySerializer(many=True)
    count = serializers.IntegerField(help_text="Number of matches over all pages.")


def _any_case(word: str) -> str:
    return "".join(f"[{letter}{letter.lower()}]" for letter in word)


_BLANKS = f"[{PYTHON_BLANKS}]*"
# The patterns below include the blank value ("not given"); BLANK_REFUSED has api.schema
# take out the separate blank alternative drf-spectacular adds, which would make `""` match
# twice and so fail the `oneOf`.
SEVERITY_SCHEMA = {
    "type": "string", "nullable": True, BLANK_REFUSED: True,
    "pattern": f"^{_BLANKS}(?:{'|'.join(_any_case(name) for name in SEVERITY_NAMES)})?"
               f"{_BLANKS}$",
    "description": "Least severity of the entries: TRACE, DEBUG, INFO, WARN, ERROR, FATAL "
    "or OFF (matches nothing), any case; WARNING and CRITICAL are read as WARN and FATAL. "
    "Blank: every severity."}
INSTANT_SCHEMA = {"type": "string", "nullable": True, BLANK_REFUSED: True,
                  "pattern": accepted_instant_pattern(),
                  "description": "UTC, ISO 8601 with `Z` (`2025-11-08T12:00:00Z`); blank: not "
                  "given."}


def _instant_field(**kwargs: Any) -> StrictCharField:
    return documented(StrictCharField, INSTANT_SCHEMA)(required=False, allow_null=True,
                                                       **kwargs)


class LogQuerySerializer(serializers.Serializer):
    """Types only; values are checked by general.selectors.log_filters_parse."""

    pagination = pagination_field(**SORTING)
    to = _instant_field(help_text="Latest entry date (inclusive); default: now.")
    severity = documented(StrictCharField, SEVERITY_SCHEMA)(required=False, allow_null=True)
    logger = StrictCharField(required=False, allow_null=True,
                             help_text="Part of the logger name, any case; blank: every logger.")

    def get_fields(self) -> dict[str, serializers.Field]:
        """`from` is a Python keyword, so it cannot be declared in the class body."""
        fields = super().get_fields()
        start = _instant_field(help_text="Earliest entry date (inclusive); default: the epoch.")
        return {"pagination": fields.pop("pagination"), "from": start, **fields}


class ConfigMapSerializer(serializers.Serializer):
    map = serializers.DictField(child=serializers.CharField(),
                                help_text="Requested public key → value, as text.")
