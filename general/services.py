"""Writing log entries: retention (the handler writes the entries, general.log_handler)."""
from django.conf import settings

from database.retention import rows_remove_old
from general.models import LogEntry

RETENTION_BATCH_SIZE = 1000


def log_remove_old(*, batch_size: int = RETENTION_BATCH_SIZE) -> int:
    """Delete entries older than LOG_DB_MAX_AGE_DAYS (0: keep every entry), `batch_size` at a
    time, each batch one short statement in its own transaction, so that the handler's writes
    and the logs query never wait long. Returns how many were deleted."""
    return rows_remove_old(LogEntry.objects.all(), age_field="entry_date",
                           max_age_days=settings.LOG_DB_MAX_AGE_DAYS, batch_size=batch_size,
                           max_batches=None)
