"""Sending without a broker (notifications.inprocess) while the process exits."""
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

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
