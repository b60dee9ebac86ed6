"""Concurrent instance writers against the real PostgreSQL: overlapping ids written in
opposite orders wait for each other instead of deadlocking (a deadlock was a 500)."""
import logging

import pytest

from store.interfaces import InterfaceDraft
from store.models import ServiceInstance
from store.services.instances import InstanceDraft, instance_create_many
from tests.concurrency import (
    hold_first_caller,
    meet_before,
    run_in_two_threads,
    second_writer_waits,
)
from tests.store.helpers import http_interface

pytestmark = pytest.mark.django_db(transaction=True)


class InstanceDeadlockTests:
    def test_two_creates_of_the_same_new_ids_in_opposite_orders_do_not_deadlock(
            self, monkeypatch, caplog):
        """Each INSERT waits at once for a concurrent insert of the same id: inserted in
        request order, two requests listing the same ids in opposite orders waited for each
        other. Now every writer inserts in id order; the second replaces the first's rows."""
        caplog.set_level(logging.INFO, logger="database.transaction_retry")
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


class InstanceCreateRaceTests:
    def test_a_second_create_of_the_same_new_id_waits_for_the_first(self, monkeypatch):
        """A new id cannot be row-locked: two creates (with a remove between them) raced to
        insert it, and the loser's unique violation was a 500. Now the second create waits
        for the first one's id lock, then replaces what it wrote."""
        from store.services import instances as service

        interface = http_interface()
        draft = InstanceDraft("RaceProvider", "svc", "1.0.0", None, {}, [InterfaceDraft(
            interface["templateName"], interface["protocol"], interface["policy"],
            interface["properties"])])
        entered, release, first_waiting = hold_first_caller(monkeypatch, service, "_store_chunk")

        def create():
            return len(instance_create_many(drafts=[draft], limit=None))

        outcomes = second_writer_waits(create, create, entered, release, first_waiting)
        assert outcomes == {"first": 1, "second": 1,
                            "second reached the write while the first held it": False}
        assert ServiceInstance.objects.filter(provider="RaceProvider").count() == 1
