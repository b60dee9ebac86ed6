from celery import shared_task


@shared_task(name="general.remove_old_logs")
def remove_old_logs_task() -> int:
    """Periodic (Celery beat, hourly): delete log entries older than LOG_DB_MAX_AGE_DAYS."""
    from general.services import log_remove_old

    return log_remove_old()
