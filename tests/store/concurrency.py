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
