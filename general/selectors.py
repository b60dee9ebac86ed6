"""Reading stored log entries: the logs query of general management (reference-simple §6.13)."""
import datetime as dt
from dataclasses import dataclass

from django.utils import timezone

from conventions.exceptions import InvalidParameter
from conventions.pagination import PageRequest, filter_given, paginate
from conventions.timestamps import parse_utc_field
from general.models import LogEntry
from general.severities import minimum_rank

# API sort field → column; logLevel sorts by severity rank (TRACE lowest), not alphabetically.
# Default entryDate DESC, ties by logId.
SORT_COLUMNS = {"logId": "id", "entryDate": "entry_date", "logger": "logger",
                "logLevel": "level"}
SORTING = {"sort_fields": list(SORT_COLUMNS), "default_sort_field": "entryDate",
           "default_direction": "DESC"}


@dataclass(frozen=True)
class LogFilters:
    start: dt.datetime | None = None
    end: dt.datetime | None = None
    min_rank: int | None = None
    logger: str | None = None


def _instant(value: str | None, field: str) -> dt.datetime | None:
    if value is None or not value.strip():
        return None
    return parse_utc_field(value, field)


def log_filters_parse(*, start: str | None = None, end: str | None = None,
                      severity: str | None = None, logger: str | None = None) -> LogFilters:
    """Validate the filters in the reference's order (from, to, interval, severity). Blank
    values are absent; `from` defaults to the epoch and `to` to now."""
    parsed_start, parsed_end = _instant(start, "from"), _instant(end, "to")
    if parsed_start and parsed_end and parsed_end < parsed_start:
        raise InvalidParameter("Invalid time interval")
    rank = minimum_rank(severity)
    logger = logger.strip() if logger is not None else ""
    return LogFilters(start=parsed_start, end=parsed_end, min_rank=rank, logger=logger or None)


def log_list(*, filters: LogFilters, page: PageRequest) -> tuple[list[LogEntry], int]:
    """One page of matching entries and the number of all matches, both in SQL."""
    matching = filter_given(LogEntry.objects.filter(entry_date__lte=filters.end or timezone.now()),
                            entry_date__gte=filters.start, level__gte=filters.min_rank,
                            logger__icontains=filters.logger)
    rows, total = paginate(matching, page, columns=SORT_COLUMNS, tie_breaker="id")
    return list(rows), total
