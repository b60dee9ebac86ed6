"""How log records are written (LOGGING in config/settings.py): plain lines or, with
LOG_FORMAT=json, one JSON object per line; and which routine lines are not worth INFO."""
import json
import logging
from datetime import datetime, timezone
from functools import lru_cache

from celery.app.trace import LOG_RECEIVED, LOG_SUCCESS
from django.conf import settings


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line: time (UTC, ISO 8601), level, logger, message,
    requestId ("-" outside a request), process, thread, and the exception's traceback when
    there is one."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, timezone.utc)
            .isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "requestId": _request_id(record),
            "process": record.process,
            "thread": record.threadName,
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def _request_id(record: logging.LogRecord) -> str:
    """The request's id; gunicorn's access line, written after the request, has it from the
    response's X-Request-ID header (its `{x-request-id}o` atom)."""
    if record.name == "gunicorn.access" and isinstance(record.args, dict):
        return record.args.get("{x-request-id}o") or "-"
    return getattr(record, "request_id", "-")


# What Celery logs for every task it receives and finishes (celery.worker.strategy,
# celery.app.trace): the task name is the record's `name` argument.
_ROUTINE_MESSAGES = (LOG_RECEIVED, LOG_SUCCESS)


@lru_cache(maxsize=1)
def _periodic_tasks() -> frozenset[str]:
    return frozenset(entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values())


class RoutineTaskFilter(logging.Filter):
    """Celery's "received" and "succeeded" lines for periodic tasks (the sweeper every few
    seconds, change processing every 2 s…) become DEBUG records: at the default INFO they
    were half of all log lines. Their failures, and every other task's lines, are untouched."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO or record.msg not in _ROUTINE_MESSAGES:
            return True
        task = record.args.get("name") if isinstance(record.args, dict) else None
        if task not in _periodic_tasks():
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger().isEnabledFor(logging.DEBUG)
