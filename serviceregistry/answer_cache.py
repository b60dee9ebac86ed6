"""The ServiceRegistry's answers kept per process, each for SERVICE_REGISTRY_CACHE_SECONDS
(docs/local-cloud.md "Instances from the SR"): by key (an instance id, a service definition,
a system name), "not found" too, at most a number of keys (the oldest go first)."""
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from django.conf import settings

V = TypeVar("V")


class AnswerCache(Generic[V]):
    def __init__(self, max_entries: int) -> None:
        self._max_entries = max_entries
        # key -> (monotonic time of the answer, value or None for "not found"), oldest first
        self._answers: OrderedDict[str, tuple[float, V | None]] = OrderedDict()
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._answers.clear()

    def get_many(self, keys: Iterable[str], fetch: Callable[[list[str]], dict[str, V]], *,
                 refresh: bool = False) -> dict[str, V]:
        """The values of `keys` that exist (absent: not found), from fresh answers or one
        `fetch` of every other key (with `refresh`: of every key), whose failure propagates."""
        wanted = sorted(set(keys))
        now = time.monotonic()
        since = now - settings.SERVICE_REGISTRY_CACHE_SECONDS
        with self._lock:
            cached = {} if refresh else {k: self._answers[k] for k in wanted
                                         if k in self._answers}
        answers = {k: value for k, (at, value) in cached.items() if at > since}
        missing = [k for k in wanted if k not in answers]
        if missing:
            fetched = fetch(missing)
            answers.update((k, fetched.get(k)) for k in missing)
            if settings.SERVICE_REGISTRY_CACHE_SECONDS > 0:
                with self._lock:
                    for key in missing:
                        self._answers[key] = (now, answers[key])
                        self._answers.move_to_end(key)
                    while len(self._answers) > self._max_entries:
                        self._answers.popitem(last=False)
        return {k: value for k, value in answers.items() if value is not None}
