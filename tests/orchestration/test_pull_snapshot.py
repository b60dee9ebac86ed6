"""The pull snapshot (orchestration/snapshot/state.py): pulls outside a transaction are answered from
memory, and every change committed before a pull, by any write path and any connection, is
in its answer. These tests commit (transactional database); the process's snapshot is loaded
at the start of each."""
import datetime as dt
import gc
import random
import threading
import weakref

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from database.bulk_write import bulk_write_declare
from orchestration.models import OrchestrationLock, SnapshotChange
from orchestration.pull.normalization import parse_orchestration_request
from orchestration.pull.services import orchestrate_preview, orchestrate_unrecorded
from orchestration.snapshot import changes as snapshot_changes
from orchestration.snapshot import loading
from orchestration.snapshot import state as snapshot_module
from orchestration.snapshot.state import pull_snapshot
from store.models import Rule, ServiceInterface
from tests.api.test_requests_in_progress import held_request
from tests.concurrency import Background, run_together, wait_until
from tests.factories import make_instances, make_rules
from tests.orchestration.helpers import instance_ids, pull
from tests.store.helpers import (
    CREATE,
    I_CREATE,
    I_REMOVE,
    I_UPDATE,
    MODIFY,
    REMOVE,
    entry,
    http_interface,
    instance_body,
    post,
)

pytestmark = pytest.mark.django_db(transaction=True)

THERMO = "Thermo|temperatureInfo|1.0.0"
OTHER = "Other|temperatureInfo|1.0.0"
TEMPERATURE = {"serviceRequirement": {"serviceDefinition": "temperatureInfo"}}


@pytest.fixture
def snapshot(settings):
    settings.PULL_SNAPSHOT = True
    pull_snapshot.load()
    return pull_snapshot


def loaded(snapshot_fixture) -> None:
    """Load again after the test wrote its data directly."""
    snapshot_fixture.load()


def pulled(api, consumer: str = "Car", body=TEMPERATURE) -> tuple[list[str], list[str]]:
    """The instance ids a pull answers and the SQL it ran in this thread."""
    with CaptureQueriesContext(connection) as queries:
        answer = pull(api, body, consumer)
    return instance_ids(answer), [query["sql"] for query in queries]


def read_tables(sqls: list[str]) -> bool:
    return any(table in sql for sql in sqls
               for table in ("store_rule", "store_serviceinstance", "orchestration_orchestrationlock"))


class AnsweringTests:
    def test_it_answers_from_memory(self, api, snapshot):
        make_instances(instance_body("Thermo"), instance_body("Other"))
        make_rules(("Car", THERMO, 1), ("Car", OTHER, 2))
        loaded(snapshot)
        ids, sqls = pulled(api)
        assert ids == [THERMO, OTHER]
        # At most the feed read (a statement prepared beneath Django's cursor: not captured).
        assert not read_tables(sqls)

    def test_it_reads_the_database_inside_a_transaction(self, snapshot):
        make_rules(("Car", THERMO, 1))
        loaded(snapshot)
        request = parse_orchestration_request({})
        with transaction.atomic(), CaptureQueriesContext(connection) as queries:
            Rule.objects.filter(consumer="Car").delete()  # not committed: memory cannot know
            result = orchestrate_unrecorded(consumer="Car", request=request, now=timezone.now())
        assert result.results == []
        assert read_tables([query["sql"] for query in queries])

    def test_it_reads_the_database_when_switched_off(self, api, snapshot, settings):
        make_rules(("Car", THERMO, 1))
        loaded(snapshot)
        settings.PULL_SNAPSHOT = False
        ids, sqls = pulled(api)
        assert ids == [THERMO] and read_tables(sqls)

    def test_it_reads_the_database_above_the_rule_limit(self, api, snapshot, settings):
        make_rules(("Car", THERMO, 1), ("Car", OTHER, 2))
        settings.PULL_SNAPSHOT_MAX_RULES = 1
        loaded(snapshot)
        ids, sqls = pulled(api)
        assert ids == [THERMO, OTHER] and read_tables(sqls)


class ChangeTests:
    """Each write path, then a pull at once: the change is in the answer."""

    def test_it_sees_rules_created_modified_and_removed(self, api, snapshot):
        assert pulled(api)[0] == []
        created = post(api, CREATE, {"entries": [entry("Car", THERMO, 1),
                                                 entry("Car", OTHER, 2)]})
        assert created.status_code == 201, created.content
        assert pulled(api)[0] == [THERMO, OTHER]
        first, second = (rule["id"] for rule in created.json()["entries"])
        assert post(api, MODIFY, {first: 2, second: 1}).status_code == 200
        assert pulled(api)[0] == [OTHER, THERMO]
        assert api.delete(f"{REMOVE}?uuids={second}", **_sysop()).status_code == 200
        assert pulled(api)[0] == [THERMO]

    def test_it_sees_instances_created_updated_and_removed(self, api, snapshot):
        post(api, CREATE, {"entries": [entry("Car", THERMO, 1)]})
        answer = pull(api, TEMPERATURE, "Car").json()["results"][0]
        assert "interfaces" not in answer  # unknown to the catalog: what its id tells
        assert post(api, I_CREATE, {"instances": [instance_body("Thermo")]}).status_code == 201
        answer = pull(api, TEMPERATURE, "Car").json()["results"][0]
        assert answer["interfaces"][0]["properties"]["accessPort"] == 8080
        update = {"instances": [{"instanceId": THERMO, "metadata": {"unit": "kelvin"},
                                 "interfaces": [http_interface(properties={
                                     "accessAddresses": ["127.0.0.1"], "accessPort": 9090,
                                     "basePath": "/t"})]}]}
        assert api.put(I_UPDATE, update, format="json", **_sysop()).status_code == 200
        answer = pull(api, TEMPERATURE, "Car").json()["results"][0]
        assert answer["interfaces"][0]["properties"]["accessPort"] == 9090
        assert answer["metadata"] == {"unit": "kelvin"}
        assert api.delete(f"{I_REMOVE}?ids={THERMO}", **_sysop()).status_code == 200
        assert "interfaces" not in pull(api, TEMPERATURE, "Car").json()["results"][0]

    def test_it_drops_an_instance_once_it_expired(self, api, snapshot):
        soon = timezone.now() + dt.timedelta(seconds=1)
        make_instances(instance_body("Thermo", expiresAt=soon.isoformat().replace("+00:00", "Z")))
        make_rules(("Car", THERMO, 1))
        loaded(snapshot)
        assert pulled(api)[0] == [THERMO]
        request = parse_orchestration_request(TEMPERATURE)
        later = orchestrate_unrecorded(consumer="Car", request=request,
                                       now=soon + dt.timedelta(seconds=1))
        assert later.results == []

    def test_it_sees_reservations_of_other_consumers_and_their_end(self, api, snapshot):
        make_instances(instance_body("Thermo", metadata={"allowExclusivity": 60}))
        make_rules(("Car", THERMO, 1), ("Bike", THERMO, 1))
        loaded(snapshot)
        reserved = pull(api, {**TEMPERATURE, "exclusivityDuration": 30}, "Bike")
        assert instance_ids(reserved) == [THERMO]
        assert pulled(api, "Car")[0] == []
        assert pulled(api, "Bike")[0] == [THERMO]  # the holder gets its own back
        OrchestrationLock.objects.all().delete()
        assert pulled(api, "Car")[0] == [THERMO]

    def test_it_sees_a_commit_of_another_connection_at_once(self, api, snapshot):
        Background(lambda: make_rules(("Car", THERMO, 1))).outcome()
        assert pulled(api)[0] == [THERMO]

    def test_it_sees_a_transaction_that_commits_after_a_later_one(self, api, snapshot):
        """PostgreSQL: the feed is read by transaction id from the oldest one still running,
        so a transaction that began first and commits last is not skipped."""
        wrote, go_on = threading.Event(), threading.Event()

        def long_transaction() -> None:
            with transaction.atomic():
                make_rules(("Car", THERMO, 1))
                wrote.set()
                go_on.wait(10)

        worker = Background(long_transaction)
        assert wrote.wait(10)
        make_rules(("Bike", OTHER, 1))  # commits while the first is still open
        assert pulled(api, "Bike")[0] == [OTHER]
        assert pulled(api, "Car")[0] == []
        go_on.set()
        worker.outcome()
        assert pulled(api, "Car")[0] == [THERMO]

    def test_concurrent_pulls_see_every_commit_made_before_they_began(self, snapshot):
        """Pulls share feed reads (one at a time per process); none may miss a commit that
        happened before it began."""
        committed: list[str] = []
        guard, stop = threading.Lock(), threading.Event()
        missed: list[tuple[set, set]] = []
        request = parse_orchestration_request(TEMPERATURE)

        def writer() -> None:
            for n in range(40):
                instance_id = f"Provider{n}|temperatureInfo|1.0.0"
                make_rules(("Car", instance_id, n + 1))
                with guard:
                    committed.append(instance_id)
            stop.set()

        def reader() -> None:
            while not stop.is_set():
                with guard:
                    before = set(committed)
                answer = orchestrate_preview(consumer="Car", request=request, now=timezone.now())
                seen = {entry.service_instance_id for entry in answer.results}
                if not before <= seen:
                    missed.append((before, seen))

        assert run_together(reader, reader, reader, reader, writer) == [None] * 5
        assert not missed, missed[:1]
        assert len(committed) == 40

    def test_it_reloads_after_more_changes_than_it_applies_inline(self, api, snapshot,
                                                                 monkeypatch):
        monkeypatch.setattr(snapshot_module, "MAX_INLINE_CHANGES", 3)
        make_rules(*[(f"Car{n}", THERMO, 1) for n in range(5)])
        ids, sqls = pulled(api, "Car4")
        assert ids == [THERMO] and read_tables(sqls)  # from the database meanwhile
        def applied() -> bool:  # by the background thread
            nonlocal ids, sqls
            ids, sqls = pulled(api, "Car4")
            return not read_tables(sqls)

        wait_until(applied, timeout=10, interval=0.05)
        assert ids == [THERMO] and not read_tables(sqls)

    def test_it_reloads_after_a_truncate(self, api, snapshot):
        make_rules(("Car", THERMO, 1))
        loaded(snapshot)
        with connection.cursor() as cursor:
            cursor.execute(f"TRUNCATE {Rule._meta.db_table}")
        ids, sqls = pulled(api)
        assert ids == [] and read_tables(sqls)

    def test_it_reloads_when_its_position_is_too_old_to_trust(self, api, snapshot):
        make_rules(("Car", THERMO, 1))
        loaded(snapshot)
        snapshot._read_at -= snapshot_module.TRUSTED_SECONDS + 1
        ids, sqls = pulled(api)
        assert ids == [THERMO] and read_tables(sqls)


class FeedTests:
    def test_a_latency_measurement_is_no_change(self, snapshot):
        make_instances(instance_body("Thermo"))
        before = SnapshotChange.objects.count()
        ServiceInterface.objects.update(latency_ms=3.5, latency_measured_at=timezone.now())
        assert SnapshotChange.objects.count() == before
        ServiceInterface.objects.update(properties={"accessAddresses": ["127.0.0.1"],
                                                    "accessPort": 1})
        assert SnapshotChange.objects.filter(service_instance_id=THERMO).count() > 0

    def test_pruning_keeps_what_was_seen_recently(self, snapshot):
        make_rules(("Car", THERMO, 1))
        now = timezone.now()
        snapshot_changes.changes_prune(now=now)
        assert SnapshotChange.objects.filter(seen_at__isnull=True).count() == 0
        assert snapshot_changes.changes_prune(now=now) == 0
        later = now + dt.timedelta(seconds=snapshot_changes.CHANGE_KEEP_SECONDS + 1)
        make_rules(("Bike", THERMO, 1))
        assert snapshot_changes.changes_prune(now=later) > 0
        assert list(SnapshotChange.objects.values_list("consumer", flat=True)) == ["Bike"]


    def test_a_statement_the_server_forgot_is_prepared_again(self, snapshot):
        position = snapshot_changes.feed_start()
        assert snapshot_changes.changes_since(position, 10)[0] == []
        with connection.cursor() as cursor:
            cursor.execute("DEALLOCATE ALL")  # what the driver sends after some DDL
        make_rules(("Car", THERMO, 1))
        changes, after = snapshot_changes.changes_since(position, 10)
        assert [change.consumer for change in changes] == ["Car"]
        assert after.last_id == changes[-1].id

    def test_it_stops_watching_transactions_that_ended(self, snapshot):
        position = snapshot_changes.feed_start()
        ended = snapshot_changes.FeedPosition(position.last_id, (1, 2))  # long finished
        changes, after = snapshot_changes.changes_since(ended, 10)
        assert changes == [] and after.running == () and after.last_id == position.last_id
        make_rules(("Car", THERMO, 1))
        changes, after = snapshot_changes.changes_since(ended, 10)
        assert [change.consumer for change in changes] == ["Car"]
        assert 1 not in after.running and after.last_id > position.last_id


class FreezingTests:
    def test_a_web_worker_freezes_what_it_loaded_and_what_it_applied(self, api, snapshot,
                                                                     monkeypatch):
        monkeypatch.setattr(snapshot, "freeze_after_load", True)
        monkeypatch.setattr(snapshot_module, "FREEZE_AFTER_CHANGES", 2)
        try:
            gc.unfreeze()
            assert snapshot.load()
            assert gc.isenabled() and gc.get_freeze_count() > 0
            gc.unfreeze()
            make_rules(*[(f"Car{n}", THERMO, 1) for n in range(3)])
            assert pulled(api, "Car2")[0] == [THERMO]  # applies 3 changes, wakes the thread
            assert wait_until(gc.get_freeze_count, timeout=10)
        finally:
            gc.unfreeze()  # the test process keeps collecting everything

    def test_a_freeze_waits_for_a_break_between_requests_and_frees_their_garbage(
            self, snapshot, monkeypatch):
        """Objects of a request in progress are not frozen: frozen, they would stay for good
        once they became garbage (a request's objects form cycles)."""
        monkeypatch.setattr(snapshot, "freeze_after_load", True)
        monkeypatch.setattr(snapshot_module, "REQUEST_WAIT_SECONDS", 0.05)

        class Cyclic:
            pass

        held = Cyclic()
        held.itself = held
        gc.collect()  # it survives collections, as a long request's objects do
        gone = weakref.ref(held)
        request, _, release = held_request()
        try:
            gc.unfreeze()
            snapshot._freeze()
            assert gc.get_freeze_count() == 0 and snapshot._freeze_due  # postponed
            del held  # the request ends: its objects are garbage
            release.set()
            request.join(5)
            snapshot._freeze()
            assert gc.get_freeze_count() > 0 and not snapshot._freeze_due
            assert gone() is None  # collected, not frozen
        finally:
            release.set()
            gc.unfreeze()

    def test_a_load_is_frozen_at_once_even_while_requests_go_on(self, snapshot, monkeypatch):
        """Until it is, each collection would walk the whole snapshot."""
        monkeypatch.setattr(snapshot, "freeze_after_load", True)
        monkeypatch.setattr(snapshot_module, "REQUEST_WAIT_SECONDS", 0.05)
        request, _, release = held_request()
        try:
            gc.unfreeze()
            assert snapshot.load()
            assert gc.get_freeze_count() > 0 and not snapshot._freeze_due
        finally:
            release.set()
            request.join(5)
            gc.unfreeze()

    def test_a_process_without_a_break_between_requests_freezes_after_a_while(
            self, snapshot, monkeypatch):
        monkeypatch.setattr(snapshot, "freeze_after_load", True)
        monkeypatch.setattr(snapshot_module, "REQUEST_WAIT_SECONDS", 0.05)
        monkeypatch.setattr(snapshot_module, "FREEZE_WAIT_SECONDS", 0.3)
        request, _, release = held_request()
        try:
            gc.unfreeze()
            snapshot._freeze()
            assert gc.get_freeze_count() == 0
            threading.Event().wait(0.4)
            snapshot._freeze()
            assert gc.get_freeze_count() > 0 and not snapshot._freeze_due
        finally:
            release.set()
            request.join(5)
            gc.unfreeze()


class BusyLoadingTests:
    """What a load does to the other pulls of its host (issue 34, bulk changes)."""

    def test_one_process_of_a_host_loads_at_a_time(self, snapshot):
        entered, release, order = threading.Event(), threading.Event(), []

        def first() -> None:
            with snapshot_module._one_load_per_host():
                order.append("first in")
                entered.set()
                release.wait(10)
                order.append("first out")

        def second() -> None:
            entered.wait(10)
            with snapshot_module._one_load_per_host():
                order.append("second in")

        threads = [threading.Thread(target=first), threading.Thread(target=second)]
        for thread in threads:
            thread.start()
        entered.wait(10)
        threading.Event().wait(0.3)  # the second is waiting for the lock by now
        assert order == ["first in"]
        release.set()
        for thread in threads:
            thread.join(10)
        assert order == ["first in", "first out", "second in"]

    def test_a_load_lets_other_threads_run_often_and_restores_the_interval(self, snapshot,
                                                                           monkeypatch):
        seen, before = [], snapshot_module.sys.getswitchinterval()
        real = snapshot_module.load_rules
        monkeypatch.setattr(snapshot_module, "load_rules",
                            lambda *args, **kwargs: seen.append(
                                snapshot_module.sys.getswitchinterval()) or real(*args, **kwargs))
        assert snapshot.load()
        assert seen == [snapshot_module.BUSY_SWITCH_INTERVAL]
        assert snapshot_module.sys.getswitchinterval() == before


def bulk_write(*specs: tuple[str, str, int]) -> None:
    """Rules written by one transaction declared a bulk write (an import's way)."""
    with transaction.atomic():
        bulk_write_declare()
        make_rules(*specs)


def held_list_read(monkeypatch) -> tuple[threading.Event, threading.Event]:
    """The background thread's reading of a bulk write's list of consumers waits for
    `release` (`reading` is set once it does)."""
    real, reading, release = snapshot_module.bulk_consumers, threading.Event(), \
        threading.Event()

    def bulk_consumers(ids, between=None):
        if threading.current_thread().name == "pull-snapshot":
            reading.set()
            release.wait(20)
        return real(ids, between)

    monkeypatch.setattr(snapshot_module, "bulk_consumers", bulk_consumers)
    return reading, release


class BulkChangeTests:
    """A bulk write's consumers are read again in the background; every other consumer is
    answered from memory meanwhile (issue 34, goal 3)."""

    @pytest.fixture
    def held(self, monkeypatch):
        """The background thread's reading of a batch of stale consumers waits for `release`
        (and runs what `meanwhile` holds then, once, before it returns what it read)."""
        real, reading = snapshot_module.load_rules, threading.Event()
        release, meanwhile = threading.Event(), []

        def load_rules(consumers=None, sharing=None, between=None):
            if threading.current_thread().name != "pull-snapshot" or consumers is None:
                return real(consumers, sharing, between)
            rules = real(consumers, sharing, between)
            reading.set()
            release.wait(20)
            while meanwhile:
                meanwhile.pop(0)()
            return rules

        monkeypatch.setattr(snapshot_module, "load_rules", load_rules)
        return reading, release, meanwhile

    def test_others_are_answered_from_memory_while_the_stale_are_read_again(self, api,
                                                                           snapshot, held):
        reading, release, _ = held
        make_rules(("Car", THERMO, 1), ("Bulk1", OTHER, 1))
        loaded(snapshot)
        bulk_write(("Bulk1", THERMO, 2), ("Bulk2", THERMO, 1))
        ids, sqls = pulled(api)  # hands the bulk change to the background thread
        assert ids == [THERMO]
        assert reading.wait(10)
        assert snapshot._data.stale == {"Bulk1", "Bulk2"}
        ids, sqls = pulled(api)
        assert ids == [THERMO] and not read_tables(sqls)
        ids, sqls = pulled(api, "Bulk1")
        assert ids == [OTHER, THERMO] and read_tables(sqls)  # from the database meanwhile
        release.set()
        assert wait_until(lambda: not snapshot._data.stale, timeout=10)
        ids, sqls = pulled(api, "Bulk2")
        assert ids == [THERMO] and not read_tables(sqls)
        ids, sqls = pulled(api, "Bulk1")
        assert ids == [OTHER, THERMO] and not read_tables(sqls)

    def test_a_consumer_changed_while_its_batch_is_read_stays_stale(self, api, snapshot,
                                                                    held):
        reading, release, meanwhile = held
        loaded(snapshot)
        bulk_write(("Bulk1", THERMO, 1), ("Bulk2", THERMO, 1))
        # Committed after the batch was read, applied before it is installed.
        meanwhile.append(lambda: (make_rules(("Bulk1", OTHER, 2)), snapshot.view()))
        pulled(api)
        assert reading.wait(10)
        release.set()
        assert wait_until(lambda: snapshot._data.stale == {"Bulk1"}
                          or not snapshot._data.stale, timeout=10)
        assert wait_until(lambda: not snapshot._data.stale, timeout=10)  # the next batch
        ids, sqls = pulled(api, "Bulk1")
        assert ids == [THERMO, OTHER] and not read_tables(sqls)

    def test_a_pull_meeting_a_bulk_write_asks_whether_its_list_names_the_consumer(
            self, api, snapshot, monkeypatch):
        """Before the background thread has read the bulk write's list: the consumers it
        names from the database, every other one from memory (no pull waits for the list)."""
        reading, release = held_list_read(monkeypatch)
        make_rules(("Car", THERMO, 1), ("Bulk1", OTHER, 1))
        loaded(snapshot)
        bulk_write(("Bulk1", THERMO, 2), ("Bulk2", THERMO, 1))
        try:
            ids, sqls = pulled(api)
            assert ids == [THERMO] and not read_tables(sqls)
            assert any("orchestration_bulkchangeconsumer" in sql for sql in sqls)
            assert reading.wait(10) and snapshot._data.pending
            ids, sqls = pulled(api, "Bulk1")
            assert ids == [OTHER, THERMO] and read_tables(sqls)  # named: from the database
            ids, sqls = pulled(api, "Car")
            assert ids == [THERMO] and not read_tables(sqls)
        finally:
            release.set()
        assert wait_until(lambda: not snapshot._data.pending and not snapshot._data.stale,
                          timeout=10)
        ids, sqls = pulled(api, "Bulk1")
        assert ids == [OTHER, THERMO] and not read_tables(sqls)
        assert not any("orchestration_bulkchangeconsumer" in sql for sql in sqls)

    def test_a_pull_reading_the_feed_while_the_list_is_read_keeps_its_position(
            self, api, snapshot, monkeypatch, caplog):
        """The background thread met the bulk write first and reads its list; a pull reads
        the feed meanwhile and notes the write as pending. The list makes the consumers
        stale once, and the position stays the pull's."""
        reading, release = held_list_read(monkeypatch)
        make_rules(("Car", THERMO, 1))
        loaded(snapshot)
        bulk_write(("Bulk1", THERMO, 1), ("Bulk2", THERMO, 1))
        caplog.set_level("INFO", logger=snapshot_module.__name__)
        snapshot.start()
        snapshot._wake.set()  # the background thread reads the feed first
        try:
            assert reading.wait(10)
            ids, sqls = pulled(api)  # reads the feed too, from the same position
            assert ids == [THERMO] and snapshot._data.pending
            moved = snapshot._position
            make_rules(("Car", OTHER, 2))  # a change after the bulk write's
            ids, _ = pulled(api)
            assert ids == [THERMO, OTHER]
            moved = snapshot._position
        finally:
            release.set()
        assert wait_until(lambda: not snapshot._data.pending and not snapshot._data.stale,
                          timeout=10)
        assert snapshot._position.last_id >= moved.last_id  # never back
        assert caplog.text.count("changed in bulk") == 1
        ids, sqls = pulled(api, "Bulk1")
        assert ids == [THERMO] and not read_tables(sqls)
        ids, sqls = pulled(api)
        assert ids == [THERMO, OTHER] and not read_tables(sqls)

    def test_a_batch_waits_while_the_process_answers_a_request(self, api, snapshot,
                                                               monkeypatch):
        """A catch-up batch's steps run between the process's requests (up to
        REQUEST_WAIT_SECONDS each), and the pause after it counts only its work."""
        monkeypatch.setattr(snapshot_module, "REQUEST_WAIT_SECONDS", 10)
        real_list = snapshot_module.bulk_consumers  # the list at once: this test is the batch's
        monkeypatch.setattr(snapshot_module, "bulk_consumers",
                            lambda ids, between=None: real_list(ids))
        paused = []
        real_wait = snapshot._stopping.wait

        def wait(timeout=None):
            if threading.current_thread().name == "pull-snapshot":
                paused.append(timeout)
            return real_wait(timeout)

        monkeypatch.setattr(snapshot._stopping, "wait", wait)
        loaded(snapshot)
        bulk_write(("Bulk1", THERMO, 1), ("Bulk2", THERMO, 1))
        pulled(api)  # hands the bulk change to the background thread
        request, _, release = held_request()
        try:
            assert wait_until(lambda: snapshot._data.stale == {"Bulk1", "Bulk2"}, timeout=10)
            threading.Event().wait(0.5)
            assert snapshot._data.stale == {"Bulk1", "Bulk2"}  # waiting for the request
        finally:
            release.set()
            request.join(10)
        assert wait_until(lambda: not snapshot._data.stale, timeout=10)
        # The pause comes after the last batch's records are let go of.
        assert wait_until(lambda: paused, timeout=10)
        assert max(paused) < 0.4  # the work, not the wait

    def test_the_list_is_read_between_the_processs_requests(self, api, snapshot,
                                                            monkeypatch):
        monkeypatch.setattr(snapshot_module, "REQUEST_WAIT_SECONDS", 10)
        make_rules(("Car", THERMO, 1))
        loaded(snapshot)
        bulk_write(("Bulk1", THERMO, 1), ("Bulk2", THERMO, 1))
        request, _, release = held_request()
        try:
            ids, _ = pulled(api)  # notes the bulk write as pending
            assert ids == [THERMO] and snapshot._data.pending
            threading.Event().wait(0.5)
            assert snapshot._data.pending and not snapshot._data.stale
        finally:
            release.set()
            request.join(10)
        assert wait_until(lambda: not snapshot._data.pending and not snapshot._data.stale,
                          timeout=10)

    def test_every_load_shares_the_snapshots_records_until_it_is_full(self, api, snapshot,
                                                                       monkeypatch):
        """The full load, a catch-up's batches and a change's consumers share one sharing;
        once it is full, the background thread lets go of it between requests and begins
        another."""
        monkeypatch.setattr(snapshot_module, "REQUEST_WAIT_SECONDS", 10)
        make_rules(("Car", THERMO, 1), ("Car", OTHER, 2))
        loaded(snapshot)
        sharing = snapshot._records
        car = snapshot._data.rules["Car"]["temperatureInfo"]
        assert sharing.groups == {car: car} and len(sharing.rules) == 2
        bulk_write(("Bulk1", THERMO, 1), ("Bulk1", OTHER, 2), ("Bulk2", THERMO, 1))
        pulled(api)  # hands the bulk change to the background thread
        assert wait_until(lambda: "Bulk2" in snapshot._data.rules and not snapshot._data.stale,
                          timeout=10)
        rules = snapshot._data.rules
        assert rules["Bulk1"]["temperatureInfo"] is car
        assert rules["Bulk2"]["temperatureInfo"][0] is car[0]
        make_rules(("Van", OTHER, 2), ("Van", THERMO, 1))
        pulled(api)  # applies the change
        assert snapshot._data.rules["Van"]["temperatureInfo"] is car
        assert snapshot._records is sharing and len(sharing.groups) == 2
        released = []
        real_release = loading.RecordSharing.release

        def release(full, between):
            released.append((full, len(full.groups), len(full.rules)))
            real_release(full, between)

        monkeypatch.setattr(loading.RecordSharing, "release", release)
        monkeypatch.setattr(loading, "SHARED_MAX", 3)
        snapshot._wake.set()
        assert wait_until(lambda: released, timeout=10)
        assert released == [(sharing, 2, 2)]
        assert not sharing.groups and not sharing.rules and snapshot._records is not sharing
        assert snapshot._data.rules["Van"]["temperatureInfo"] is car  # the snapshot keeps it

    def test_a_batch_keeps_the_hosts_turn_while_it_pauses(self, api, snapshot,
                                                          monkeypatch):
        """The pause after a batch is the host's (`CATCH_UP_PAUSE`): no other process of the
        host loads or reads a batch until it is over."""
        pausing, resume, entered = threading.Event(), threading.Event(), threading.Event()
        real_wait = snapshot._stopping.wait

        def wait(timeout=None):
            if threading.current_thread().name != "pull-snapshot":
                return real_wait(timeout)
            pausing.set()
            resume.wait(20)
            return False

        def other_process() -> None:
            with snapshot_module._one_load_per_host():
                entered.set()

        monkeypatch.setattr(snapshot._stopping, "wait", wait)
        loaded(snapshot)
        bulk_write(("Bulk1", THERMO, 1))
        pulled(api)
        assert pausing.wait(10)
        other = threading.Thread(target=other_process)
        other.start()
        try:
            assert not entered.wait(0.3)  # the host's turn is the pausing batch's
        finally:
            resume.set()
        assert entered.wait(10)
        other.join(10)
        assert wait_until(lambda: not snapshot._data.stale, timeout=10)

    def test_a_truncate_among_the_changes_still_loads_everything(self, api, snapshot):
        make_rules(("Car", THERMO, 1))
        loaded(snapshot)
        bulk_write(("Bulk1", THERMO, 1))
        with connection.cursor() as cursor:
            cursor.execute(f"TRUNCATE {Rule._meta.db_table}")
        assert wait_until(lambda: snapshot._data is None or snapshot._data.rule_count == 0,
                          timeout=10)
        ids, _ = pulled(api)
        assert ids == []


class KeyedReadTests:
    def test_many_keys_are_read_one_key_at_a_time(self, snapshot):
        """However many consumers a batch names, the rule table is read per name (a nested
        loop over the names, never one scan of the whole table for all of them)."""
        sql, params = loading._each_key(
            f"SELECT consumer, priority FROM {Rule._meta.db_table} WHERE {{keys}}",
            "consumer", [f"Consumer{n}" for n in range(2000)])
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN {sql}", params)
            plan = "\n".join(row[0] for row in cursor.fetchall())
        assert plan.startswith("Nested Loop") and "Function Scan on unnest" in plan, plan
        assert "Gather" not in plan and "Hash" not in plan, plan
        with connection.cursor() as cursor:
            cursor.execute("SET enable_seqscan = off")  # as on a table too large to scan
            try:
                cursor.execute(f"EXPLAIN {sql}", params)
                plan = "\n".join(row[0] for row in cursor.fetchall())
            finally:
                cursor.execute("RESET enable_seqscan")
        assert "Index" in plan and "= wanted.key" in plan, plan  # per key, from an index

    def test_keyed_reads_answer_as_the_full_load(self, snapshot):
        make_instances(instance_body("Thermo"), instance_body("Other"))
        make_rules(("Car", THERMO, 1), ("Car", OTHER, 2), ("Bus", OTHER, 1),
                   ("Van", THERMO, 3))
        everything = loading.load_rules()
        assert loading.load_rules(["Car", "Bus", "Car", "Nobody"]) == {
            consumer: everything[consumer] for consumer in ("Car", "Bus")}
        assert loading.load_rules([]) == {}
        assert list(loading.load_instances([OTHER, OTHER, THERMO])) in (
            [OTHER, THERMO], [THERMO, OTHER])
        assert loading.load_instances([]) == {}

    def test_equal_groups_share_one_tuple_and_records(self, snapshot):
        make_instances(instance_body("Thermo"), instance_body("Other"))
        make_rules(("Car", THERMO, 1), ("Car", OTHER, 2), ("Bus", THERMO, 1),
                   ("Bus", OTHER, 2), ("Van", THERMO, 1))
        sharing = loading.RecordSharing()
        first = loading.load_rules(["Car"], sharing)
        second = loading.load_rules(["Bus", "Van"], sharing)
        car, bus, van = (rules["temperatureInfo"] for rules in (
            first["Car"], second["Bus"], second["Van"]))
        assert car is bus and [rule.priority for rule in car] == [1, 2]
        assert van[0] is car[0] and van != car


    def test_shared_records_are_let_go_of_a_few_at_a_time(self, snapshot, monkeypatch):
        monkeypatch.setattr(loading, "RELEASED", 2)
        make_instances(instance_body("Thermo"), instance_body("Other"))
        make_rules(("Car", THERMO, 1), ("Car", OTHER, 2), ("Bus", THERMO, 1), ("Van", OTHER, 1))
        sharing = loading.RecordSharing()
        loading.load_rules(["Car", "Bus", "Van"], sharing)
        assert len(sharing.groups) == 3 and len(sharing.rules) == 3
        left = []
        sharing.release(lambda: left.append((len(sharing.groups), len(sharing.rules))))
        assert left == [(3, 3), (1, 3), (0, 3), (0, 1)]  # before each step of 2
        assert not sharing.groups and not sharing.rules

class EquivalenceTests:
    def test_memory_and_database_answer_alike(self, snapshot, settings):
        """Random catalog, rules, reservations and requests: the snapshot's answer is the
        database's."""
        rng = random.Random(14)
        now = timezone.now()
        providers = [f"Provider{n}" for n in range(6)]
        definitions = ["temperatureInfo", "pressureInfo", "humidityInfo"]
        bodies = []
        for provider in providers:
            for definition in definitions:
                if rng.random() < 0.7:
                    expires = rng.choice([None, now + dt.timedelta(minutes=30),
                                          now + dt.timedelta(hours=2)])
                    bodies.append(instance_body(
                        provider, definition, version=rng.choice(["1.0.0", "2.0.0"]),
                        expiresAt=expires and expires.isoformat().replace("+00:00", "Z"),
                        metadata={"rank": rng.randint(0, 3), "allowExclusivity": 60},
                        interfaces=rng.sample([http_interface(), _mqtt(), _tokens()],
                                              rng.randint(1, 3))))
        make_instances(*bodies)
        ids = [f"{b['systemName']}|{b['serviceDefinitionName']}|{b['version']}" for b in bodies]
        ids += ["Ghost|temperatureInfo|1.0.0"]  # a rule to an instance the catalog lacks
        consumers = [f"Consumer{n}" for n in range(5)]
        rules = {(c, i.split("|")[1], p): (c, i, p) for c in consumers for i in ids
                 for p in [rng.randint(1, 5)] if rng.random() < 0.5}
        make_rules(*rules.values())
        for instance_id in rng.sample(ids, 3):
            OrchestrationLock.objects.create(service_instance_id=instance_id,
                                             owner=rng.choice(consumers),
                                             expires_at=now + dt.timedelta(hours=2),
                                             created_at=now)
        loaded(snapshot)
        at = now + dt.timedelta(hours=1)  # some instances have expired by then
        requests = [{}, {"orchestrationFlags": {"MATCHMAKING": True}},
                    {"serviceRequirement": {"securityPolicies": ["NONE"]}},
                    {"serviceRequirement": {"interfaceTemplateNames": ["generic_mqtt"]}},
                    {"serviceRequirement": {"metadataRequirements": [{"rank": 1}]}},
                    {"serviceRequirement": {"versions": ["2.0.0"], "operations": ["query"]}},
                    {"serviceRequirement": {"preferredProviders": ["Provider2"]},
                     "orchestrationFlags": {"ONLY_PREFERRED": True}}]
        for definition in definitions:
            requests.append({"serviceRequirement": {"serviceDefinition": definition}})
        answered = 0
        for consumer in consumers:
            for body in requests:
                request = parse_orchestration_request(body)
                settings.PULL_SNAPSHOT = True
                with CaptureQueriesContext(connection) as queries:
                    memory = orchestrate_preview(consumer=consumer, request=request, now=at)
                assert not read_tables([query["sql"] for query in queries])
                settings.PULL_SNAPSHOT = False
                database = orchestrate_preview(consumer=consumer, request=request, now=at)
                assert memory == database, (consumer, body)
                answered += len(memory.results)
        assert answered > 50  # the data made the comparisons count


def _mqtt() -> dict:
    return {"templateName": "generic_mqtt", "protocol": "tcp", "policy": "NONE",
            "properties": {"accessAddresses": ["localhost"], "accessPort": 1883,
                           "baseTopic": "plant/", "operations": ["query"]}}


def _tokens() -> dict:
    return http_interface(policy="TIME_LIMITED_TOKEN_AUTH")


def _sysop() -> dict:
    return {"HTTP_AUTHORIZATION": "Bearer SYSTEM//Sysop"}
