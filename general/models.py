from django.db import models

from general.log_columns import MAX_LOGGER_LENGTH
from general.severities import RANKS


class LogEntry(models.Model):
    """A log record at LOG_DB_LEVEL or above, written by general.log_handler (reference-simple
    §11 `logs`). `level` is the rank of `severity` (general.severities), so that "this level
    and above" and sorting by level are plain comparisons."""

    id = models.BigAutoField(primary_key=True)
    entry_date = models.DateTimeField()
    logger = models.CharField(max_length=MAX_LOGGER_LENGTH)
    severity = models.CharField(max_length=5, choices=[(name, name) for name in RANKS])
    level = models.SmallIntegerField()
    message = models.TextField()
    exception = models.TextField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "log entries"
        indexes = [
            models.Index(fields=["entry_date"], name="log_entry_date"),
            models.Index(fields=["level", "entry_date"], name="log_level_entry_date"),
        ]
        # Reading the public configuration (get-config) is granted separately from the logs.
        permissions = [("view_config", "Can view the public configuration")]

    def __str__(self) -> str:
        return f"{self.entry_date:%Y-%m-%d %H:%M:%S} {self.severity} {self.logger}"
