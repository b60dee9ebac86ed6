"""Running test code concurrently and waiting for it: threads started together or one held
inside its transaction while another waits for its lock, and polling with a deadline. Each
thread closes its own database connection when its call ends."""
import threading
import time
from collections.abc import Callable
from typing import Any

from django.db import connection

WAIT_SECONDS = 10


def wait_until(condition: Callable[[], Any], timeout: float = 20.0,
               interval: float = 0.01) -> bool:
    """Poll `condition` until it holds (True) or `timeout` seconds have passed (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval)
    return bool(condition())


def wait_for(condition: Callable[[], Any], timeout: float = WAIT_SECONDS,
             what: str = "condition") -> None:
    """As `wait_until`, failing the test when `condition` does not hold in time."""
    if not wait_until(condition, timeout):
        raise AssertionError(f"Timed out waiting for {what}")


def lock_waiters() -> int:
    """How many other sessions of this database wait for a lock."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                       "WHERE NOT l.granted AND a.datname = current_database() "
                       "AND a.pid <> pg_backend_pid()")
        return cursor.fetchone()[0]


class Background(threading.Thread):
    """`call` running in a thread of its own, started at once (after `barrier`, if given);
    `outcome()` joins it and returns what the call returned or raised."""

    def __init__(self, call: Callable[[], Any], name: str | None = None,
                 barrier: threading.Barrier | None = None) -> None:
        super().__init__(name=name, daemon=True)
        self._call, self._barrier, self._outcome = call, barrier, None
        self.start()

    def run(self) -> None:
        try:
            if self._barrier is not None:
                self._barrier.wait(timeout=30)
            self._outcome = self._call()
        except Exception as error:  # noqa: BLE001 - the test reports what it got
            self._outcome = error
        finally:
            connection.close()

    def outcome(self, timeout: float = 60) -> Any:
        self.join(timeout)
        assert not self.is_alive(), f"{self.name} did not finish within {timeout} s"
        return self._outcome


def run_together(*calls: Callable[[], Any], names: tuple[str, ...] | None = None,
                 timeout: float = 60) -> list[Any]:
    """Start every call at the same moment (a barrier), each in its own thread; returns what
    each returned or raised, in order."""
    barrier = threading.Barrier(len(calls))
    threads = [Background(call, names[index] if names else None, barrier)
               for index, call in enumerate(calls)]
    return [thread.outcome(timeout) for thread in threads]


def run_in_two_threads(call, first_args: tuple, second_args: tuple) -> dict[str, object]:
    """Run `call` in threads "a" and "b" (the names `meet_before` expects); returns what each
    returned or raised."""
    first, second = run_together(lambda: call(*first_args), lambda: call(*second_args),
                                 names=("a", "b"))
    return {"a": first, "b": second}


def meet_before(monkeypatch, manager, method: str, threads: tuple[str, str]) -> None:
    """Make `manager.method` (e.g. a model's `bulk_create`) in the threads named `threads`
    wait for the other thread to get there too, or to wait for a database lock (where a
    correctly ordered writer keeps the second one), so that both write at the same moment."""
    arrived = {name: threading.Event() for name in threads}
    original = getattr(type(manager), method)

    def together(self, *args, **kwargs):
        me = threading.current_thread().name
        if me in arrived:
            arrived[me].set()
            other = arrived[threads[1] if me == threads[0] else threads[0]]
            wait_until(lambda: other.is_set() or lock_waiters(), interval=0.001)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(type(manager), method, together)


def hold_first_caller(monkeypatch, owner, method: str):
    """Make the first call of `owner.method` (a class attribute) wait inside its caller's
    transaction until `release` is set; other calls go through and are counted in `entered`.
    Returns (entered, release, first_waiting) events and a counter, for tests that check
    that a second writer of the same thing waits for the first instead of writing beside it."""
    original = getattr(owner, method)
    first_waiting, release = threading.Event(), threading.Event()
    entered: list[str] = []

    def held(*args, **kwargs):
        entered.append(threading.current_thread().name)
        if len(entered) == 1:
            first_waiting.set()
            release.wait(timeout=30)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, method, held)
    return entered, release, first_waiting


def second_waits_for_lock(first: Callable[[], Any], first_holds: threading.Event,
                          second: Callable[[], Any], release: threading.Event,
                          waits: Callable[[], Any] = lock_waiters,
                          timeout: float = 30) -> tuple[Any, Any]:
    """Run `first` until it sets `first_holds` (inside its transaction), then `second`; check
    that `waits()` comes true (by default: a session waits for a database lock), then set
    `release` and return what both returned or raised."""
    holder = Background(first, "first")
    try:
        assert first_holds.wait(timeout=timeout), "the first call never got to the held step"
        waiter = Background(second, "second")
        try:
            assert wait_until(waits), "the second call never waited for the first"
        finally:
            release.set()
        return holder.outcome(), waiter.outcome()
    finally:
        release.set()


def second_writer_waits(call_first, call_second, entered: list[str], release: threading.Event,
                        first_waiting: threading.Event) -> dict[str, object]:
    """Run `call_first` until it is held (see `hold_first_caller`), then `call_second`; check
    that the second waits for a database lock without reaching the held method, release the
    first, and return what both returned or raised."""
    outcomes: dict[str, object] = {}

    def second_waits_or_writes() -> bool:
        outcomes["second reached the write while the first held it"] = len(entered) > 1
        return lock_waiters() > 0 or len(entered) > 1

    first, second = second_waits_for_lock(call_first, first_waiting, call_second, release,
                                          waits=second_waits_or_writes, timeout=20)
    return {"first": first, "second": second, **outcomes}
