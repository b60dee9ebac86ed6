"""Sending from this process's own pools (notifications.inprocess): while the process exits,
and the database connections of their threads."""
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from notifications import inprocess


@pytest.fixture
def stopped_pool(monkeypatch):
    """The MQTT pool as a worker's interpreter shutdown leaves it: refusing new work."""
    pool = ThreadPoolExecutor(1)
    pool.shutdown()
    monkeypatch.setitem(inprocess._pools, "mqtt", pool)
    return pool


class InProcessShutdownTests:
    def test_a_delivery_offered_to_a_stopped_pool_is_left_to_the_sweeper(self, stopped_pool,
                                                                         caplog):
        delivery_id = uuid.uuid4()
        inprocess.in_process_submit([delivery_id], http=False)  # no RuntimeError
        assert delivery_id not in inprocess._queued  # offered again by a later sweep
        assert "shutting down" in caplog.text


def _backend() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
class InProcessConnectionTests:
    """The MQTT pool's threads keep their connection between batches as a request does; the
    HTTP pool's close theirs after each."""

    @pytest.fixture
    def thread(self):
        """A pool thread of the test's own, its connection closed afterwards."""
        pool = ThreadPoolExecutor(1)
        yield pool
        pool.submit(lambda: connection.close()).result()
        pool.shutdown()

    @staticmethod
    def batch(thread: ThreadPoolExecutor, keep: bool) -> int:
        """The database backend that one batch sent on `thread` used."""
        used = []
        thread.submit(inprocess._send_logged, lambda _: used.append(_backend()), None, [],
                      keep).result()
        assert used, "the batch failed"
        return used[0]

    def test_an_mqtt_pool_thread_keeps_its_connection_between_batches(self, thread):
        assert self.batch(thread, keep=True) == self.batch(thread, keep=True)

    def test_an_http_pool_thread_closes_its_connection_after_each_batch(self, thread):
        self.batch(thread, keep=False)
        assert thread.submit(lambda: connection.connection).result() is None

    def test_a_kept_connection_that_grew_older_than_conn_max_age_idle_is_replaced(self, thread):
        first = self.batch(thread, keep=True)
        thread.submit(setattr, connection, "close_at", time.monotonic() - 1).result()
        assert self.batch(thread, keep=True) != first

    def test_a_kept_connection_the_server_ended_is_replaced_without_a_failed_batch(
            self, thread, caplog):
        first = self.batch(thread, keep=True)
        with connection.cursor() as cursor:  # what a database restart does to it
            cursor.execute("SELECT pg_terminate_backend(%s, 5000)", [first])
        assert self.batch(thread, keep=True) != first
        assert "failed" not in caplog.text
