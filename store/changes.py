"""Recording catalog and rule changes for whoever derives results from them (the
subscriptions app), without the store depending on it.

`change_record()` writes a `CatalogChange` row inside the caller's transaction (so the change
and the fact that it happened commit together) and, once committed, calls the listeners
registered with `on_change()` (the subscriptions app registers one in its AppConfig.ready()).
"""
from collections.abc import Callable, Iterable

from django.db import transaction

from store.models import CatalogChange

_listeners: list[Callable[[], None]] = []


def on_change(listener: Callable[[], None]) -> None:
    if listener not in _listeners:
        _listeners.append(listener)


def _notify() -> None:
    for listener in _listeners:
        listener()


def change_record(*, consumers: Iterable[str] = (), instance_ids: Iterable[str] = ()) -> None:
    consumers, instance_ids = sorted(set(consumers)), sorted(set(instance_ids))
    if not consumers and not instance_ids:
        return
    CatalogChange.objects.create(consumers=consumers, instance_ids=instance_ids)
    transaction.on_commit(_notify)
