"""Deleting many old rows without holding a table for long: the retention tasks (history
jobs, outbox deliveries) delete in batches, each its own short transaction."""
from django.db import models, transaction


def delete_in_batches(rows: models.QuerySet, *, oldest_first_by: str, batch_size: int,
                      max_batches: int) -> int:
    """Delete `rows`, the oldest (by the indexed field `oldest_first_by`) first, at most
    `batch_size` per transaction and `max_batches` batches per call (the rest is left to the
    next call). Returns how many rows were deleted."""
    removed = 0
    for _ in range(max_batches):
        with transaction.atomic():
            ids = list(rows.order_by(oldest_first_by).values_list("pk", flat=True)[:batch_size])
            if ids:
                removed += rows.filter(pk__in=ids).delete()[0]
        if len(ids) < batch_size:
            break
    return removed
