"""Retention: the periodic tasks that delete old rows (history jobs, outbox deliveries, log
entries) all delete them here, in batches, each batch one short DELETE statement, so that
neither the table's writers nor its readers wait long."""
import datetime as dt

from django.db import models
from django.utils import timezone


def rows_remove_old(rows: models.QuerySet, *, age_field: str, max_age_days: int,
                    batch_size: int, max_batches: int | None,
                    now: dt.datetime | None = None) -> int:
    """Delete `rows` whose `age_field` (an indexed instant) is more than `max_age_days` days
    before `now`; 0 days keeps them all. The oldest first, at most `batch_size` a statement
    and `max_batches` statements a call (the rest is left to the next call; None: until none
    is left). Returns how many were deleted."""
    if max_age_days == 0:
        return 0
    cutoff = (now or timezone.now()) - dt.timedelta(days=max_age_days)
    old = rows.filter(**{f"{age_field}__lt": cutoff}).order_by(age_field).values("pk")
    removed = batches = 0
    while max_batches is None or batches < max_batches:
        deleted, _ = rows.model._base_manager.filter(pk__in=old[:batch_size]).delete()
        removed, batches = removed + deleted, batches + 1
        if deleted < batch_size:
            break
    return removed
