"""Concurrent instance writers against the real PostgreSQL: overlapping ids written in
opposite orders wait for each other instead of deadlocking (a deadlock was a 500)."""
import logging

import pytest

from store.interfaces import InterfaceDraft
from store.models import ServiceInstance
from store.services.instances import InstanceDraft, instance_create_many
from tests.store.concurrency import meet_before, run_in_two_threads
from tests.store.helpers import http_interface

pytestmark = pytest.mark.django_db(transaction=True)


class InstanceDeadlockTests:
    def test_two_creates_of_the_same_new_ids_in_opposite_orders_do_not_deadlock(
            self, monkeypatch, caplog):
        """Each INSERT waits at once for a concurrent insert of the same id: inserted in
        request order, two requests listing the same ids in opposite orders waited for each
        other. Now every writer inserts in id order; the second replaces the first's rows."""
        caplog.set_level(logging.INFO, logger="config.transaction_retry")
        interface = http_interface()
        drafts = [InstanceDraft(f"Provider{n}", "svc", "1.0.0", None, {}, [InterfaceDraft(
            interface["templateName"], interface["protocol"], interface["policy"],
            interface["properties"])]) for n in range(3000)]
        meet_before(monkeypatch, ServiceInstance.objects, "bulk_create", ("a", "b"))
        outcomes = run_in_two_threads(
            lambda order: len(instance_create_many(drafts=order, limit=None)),
            (drafts,), (drafts[::-1],))
        assert outcomes == {"a": 3000, "b": 3000}
        assert ServiceInstance.objects.count() == 3000
        assert "retrying" not in caplog.text  # the order did it, not the retry
