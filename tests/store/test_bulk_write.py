"""Bulk rule writes (database/bulk_write.py): a transaction that declares itself one records
a single change meaning everything in the feed, not a row per consumer (issue 34: the
uncommitted rows of a long import slowed every pull's read of the feed) and lists the
consumers whose rules it changed beside it, and an import of rules for many consumers declares
itself one. The pull snapshots then read those consumers' rules again; the subscriptions
evaluate everything."""
import datetime as dt
import io
import json

import pytest
from django.core.management import call_command
from django.db import transaction
from django.utils import timezone

from database.bulk_write import bulk_write_declare
from orchestration.models import BulkChangeConsumer, SnapshotChange
from orchestration.snapshot.changes import changes_prune, changes_since, feed_start
from orchestration.snapshot.state import pull_snapshot
from store.models import Rule
from tests.factories import make_instances, make_rules
from tests.orchestration.helpers import instance_ids, pull
from tests.store.helpers import entry, instance_body

pytestmark = pytest.mark.django_db

A = "ProviderA|temperatureInfo|1.0.0"


def feed() -> list[tuple]:
    return list(SnapshotChange.objects.order_by("id").values_list("consumer",
                                                                  "service_instance_id"))


class BulkWriteTests:
    def test_a_declared_transaction_records_one_change_meaning_everything(self):
        SnapshotChange.objects.all().delete()
        with transaction.atomic():
            bulk_write_declare()
            make_rules(("C1", A, 1), ("C2", A, 1))
            make_rules(("C3", A, 2))  # another statement: still the one change
        assert feed() == [(None, None)]

    def test_it_lists_the_consumers_whose_rules_it_created_changed_or_removed(self):
        rules = make_rules(("Old", A, 1), ("Moved", A, 1), ("Kept", A, 1))
        SnapshotChange.objects.all().delete()
        with transaction.atomic():
            bulk_write_declare()
            make_rules(("New1", A, 1), ("New2", A, 2))
            rules[0].delete()
            Rule.objects.filter(consumer="Moved").update(consumer="Moved2")
        [change] = SnapshotChange.objects.all()
        assert sorted(BulkChangeConsumer.objects.filter(change_id=change.pk).values_list(
            "consumer", flat=True)) == ["Moved", "Moved2", "New1", "New2", "Old"]

    @pytest.mark.django_db(transaction=True)  # two transactions of their own: two changes
    def test_the_list_is_pruned_with_its_change(self):
        SnapshotChange.objects.all().delete()
        with transaction.atomic():
            bulk_write_declare()
            make_rules(("C1", A, 1))
        SnapshotChange.objects.update(seen_at=timezone.now() - dt.timedelta(hours=1))
        with transaction.atomic():  # a list whose change is too young to prune
            bulk_write_declare()
            make_rules(("C2", A, 1))
        [kept] = SnapshotChange.objects.filter(seen_at__isnull=True)
        assert BulkChangeConsumer.objects.count() == 2
        changes_prune()
        assert list(SnapshotChange.objects.values_list("pk", flat=True)) == [kept.pk]
        assert list(BulkChangeConsumer.objects.values_list("change_id", "consumer")) == [
            (kept.pk, "C2")]

    @pytest.mark.django_db(transaction=True)  # a transaction of its own, not a savepoint
    def test_the_declaration_ends_with_its_transaction(self):
        with transaction.atomic():
            bulk_write_declare()
            make_rules(("C1", A, 1))
        SnapshotChange.objects.all().delete()
        make_rules(("C2", A, 1))
        assert feed() == [("C2", None)]

    def test_without_it_each_consumer_is_a_change(self):
        SnapshotChange.objects.all().delete()
        make_rules(("C1", A, 1), ("C2", A, 1))
        assert sorted(feed()) == [("C1", None), ("C2", None)]


def import_file(tmp_path, entries: list[dict]) -> None:
    source = tmp_path / "import.json"
    source.write_text(json.dumps({"entries": entries}))
    call_command("import_rules", str(source), stderr=io.StringIO())


class BulkImportTests:
    def test_an_import_for_more_consumers_than_the_limit_is_a_bulk_write(self, tmp_path,
                                                                          monkeypatch):
        monkeypatch.setattr("store.services.imports.BULK_WRITE_CONSUMERS", 2)
        make_instances(instance_body("ProviderA"))
        SnapshotChange.objects.all().delete()
        import_file(tmp_path, [entry(f"Car{n}", A, 1) for n in range(3)])
        assert feed() == [(None, None)]

    def test_only_the_consumers_whose_rules_change_count(self, tmp_path, monkeypatch):
        """A replacing import locks every stored consumer's rules but changes few: it is not
        a bulk write (review of issue 34)."""
        monkeypatch.setattr("store.services.imports.BULK_WRITE_CONSUMERS", 2)
        make_instances(instance_body("ProviderA"))
        make_rules(*[(f"Car{n}", A, 1) for n in range(3)])
        SnapshotChange.objects.all().delete()
        source = tmp_path / "import.json"
        source.write_text(json.dumps({"entries": [entry(f"Car{n}", A, 1) for n in range(3)]
                                      + [entry("Car9", A, 1)]}))
        call_command("import_rules", str(source), "--replace", stderr=io.StringIO())
        assert feed() == [("Car9", None)]

    def test_a_smaller_import_records_its_consumers(self, tmp_path, monkeypatch):
        monkeypatch.setattr("store.services.imports.BULK_WRITE_CONSUMERS", 3)
        make_instances(instance_body("ProviderA"))
        SnapshotChange.objects.all().delete()
        import_file(tmp_path, [entry(f"Car{n}", A, 1) for n in range(3)])
        assert sorted(feed()) == [(f"Car{n}", None) for n in range(3)]


@pytest.mark.django_db(transaction=True)
class BulkImportPullTests:
    def test_a_pull_after_a_bulk_import_answers_the_imported_rules(self, tmp_path, api,
                                                                   monkeypatch, settings):
        settings.PULL_SNAPSHOT = True
        monkeypatch.setattr("store.services.imports.BULK_WRITE_CONSUMERS", 2)
        make_instances(instance_body("ProviderA"))
        pull_snapshot.load()
        position = feed_start()
        import_file(tmp_path, [entry(f"Car{n}", A, 1) for n in range(3)])
        changes, _ = changes_since(position, 100)
        assert [change.everything for change in changes] == [True]
        assert instance_ids(pull(api, {"serviceRequirement": {
            "serviceDefinition": "temperatureInfo"}}, "Car2")) == [A]
