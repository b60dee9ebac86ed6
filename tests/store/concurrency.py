"""Making two writers meet inside their transactions, for the deadlock tests."""
import threading
import time

from django.db import connection


def lock_waiters() -> int:
    """How many other sessions of this database wait for a lock."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                       "WHERE NOT l.granted AND a.datname = current_database() "
                       "AND a.pid <> pg_backend_pid()")
        return cursor.fetchone()[0]


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
            deadline = time.monotonic() + 20
            while not other.is_set() and not lock_waiters() and time.monotonic() < deadline:
                time.sleep(0.001)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(type(manager), method, together)


def run_in_two_threads(call, first_args: tuple, second_args: tuple) -> dict[str, object]:
    """Run `call` in threads "a" and "b"; returns what each returned or raised."""
    outcomes: dict[str, object] = {}

    def run(name, args):
        try:
            outcomes[name] = call(*args)
        except Exception as error:  # noqa: BLE001 - the test reports what it got
            outcomes[name] = error
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=("a", first_args), name="a"),
               threading.Thread(target=run, args=("b", second_args), name="b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return outcomes


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


def wait_until(condition, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return False


def second_writer_waits(call_first, call_second, entered: list[str], release: threading.Event,
                        first_waiting: threading.Event) -> dict[str, object]:
    """Run `call_first` until it is held (see `hold_first_caller`), then `call_second`; check
    that the second waits for a database lock without reaching the held method, release the
    first, and return what both returned or raised."""
    outcomes: dict[str, object] = {}

    def run(name, call):
        try:
            outcomes[name] = call()
        except Exception as error:  # noqa: BLE001 - the test reports what it got
            outcomes[name] = error
        finally:
            connection.close()

    first = threading.Thread(target=run, args=("first", call_first), name="first")
    first.start()
    assert first_waiting.wait(timeout=20), "the first writer never got to the held step"
    second = threading.Thread(target=run, args=("second", call_second), name="second")
    second.start()
    try:
        assert wait_until(lambda: lock_waiters() > 0 or len(entered) > 1), \
            "the second writer neither waited nor wrote"
        outcomes["second reached the write while the first held it"] = len(entered) > 1
    finally:
        release.set()
        first.join(timeout=60)
        second.join(timeout=60)
    return outcomes
