import io
import itertools
import json
import signal
import time

import pytest
from django.core.management import CommandError, ManagementUtility, call_command

from store.management import importing
from store.models import Rule
from tests.factories import make_rules
from tests.store.helpers import entry

pytestmark = pytest.mark.django_db


def export(tmp_path) -> dict:
    target = tmp_path / "rules.json"
    call_command("export_rules", "--output", str(target), stderr=io.StringIO())
    return json.loads(target.read_text())


def busy_until(done, timeout: float = 10.0) -> None:
    """Work (the interpreter busy) until `done()`, or fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "no pause came"


def import_rules(tmp_path, data, *args: str) -> str:
    err = io.StringIO()
    import_rules_into(tmp_path, data, *args, stderr=err)
    return err.getvalue()


def keys() -> set[tuple]:
    return set(Rule.objects.values_list("consumer", "service_instance_id", "priority"))


def refused_import(tmp_path, data, *args: str) -> tuple[list[str], str]:
    """The lines import_rules writes on stderr before it fails, and its error."""
    err = io.StringIO()
    with pytest.raises(CommandError) as error:
        import_rules_into(tmp_path, data, *args, stderr=err)
    return err.getvalue().splitlines(), str(error.value)


def import_rules_into(tmp_path, data, *args: str, **streams) -> None:
    source = tmp_path / "import.json"
    source.write_text(json.dumps(data))
    call_command("import_rules", str(source), *args, **streams)


class ExportRulesCommandTests:
    def test_it_writes_every_rule_in_the_api_shape(self, tmp_path):
        rules = make_rules(("C", "P|svc|1.0.0", 2), ("C", "P|svc|1.0.0", 1))
        data = export(tmp_path)
        assert data["count"] == 2
        assert [e["priority"] for e in data["entries"]] == [1, 2]
        assert set(data["entries"][0]) == {"id", "consumer", "serviceDefinition",
                                           "serviceInstanceId", "priority", "createdBy",
                                           "updatedBy", "createdAt", "updatedAt"}
        assert {e["id"] for e in data["entries"]} == {str(r.id) for r in rules}

    def test_it_writes_an_empty_list_when_there_are_no_rules(self, tmp_path):
        assert export(tmp_path) == {"entries": [], "count": 0}


class ImportRulesCommandTests:
    def test_it_imports_the_create_shape_normalized(self, tmp_path):
        output = import_rules(tmp_path, {"entries": [entry("consumer-a", "p|svc|1", 1),
                                                     entry("ConsumerB", "P|svc|1.0.0", 1)]},
                              "--as", "plant-admin")
        assert keys() == {("ConsumerA", "P|svc|1.0.0", 1), ("ConsumerB", "P|svc|1.0.0", 1)}
        assert set(Rule.objects.values_list("created_by", flat=True)) == {"PlantAdmin"}
        assert "Imported 2 rule(s): 2 created, 0 updated, 0 unchanged, 0 removed." in output
        assert "[##############################] 2/2" in output

    def test_it_reads_back_an_export(self, tmp_path):
        make_rules(("C", "P|svc|1.0.0", 1), ("D", "Q|svc|2.0.0", 3))
        before = keys()
        data = export(tmp_path)
        Rule.objects.all().delete()
        import_rules(tmp_path, data)
        assert keys() == before

    def test_it_replaces_existing_rules_in_one_transaction(self, tmp_path):
        make_rules(("C", "P|svc|1.0.0", 1), ("Old", "P|svc|1.0.0", 1))
        output = import_rules(tmp_path, {"entries": [entry("C", "P|svc|1.0.0", 1)]}, "--replace",
                              "--yes")
        assert keys() == {("C", "P|svc|1.0.0", 1)}
        assert "0 created, 0 updated, 1 unchanged, 1 removed." in output

    def test_it_imports_a_large_file_in_batches(self, tmp_path):
        entries = [entry(f"Consumer{n % 50}", f"P{n}|svc|1.0.0", n) for n in range(1, 2501)]
        output = import_rules(tmp_path, {"candidates": entries})
        assert Rule.objects.count() == 2500
        assert "1000/2500" in output and "2500/2500" in output

    def test_imported_rows_read_back_as_the_api_writes_them(self, tmp_path):
        import_rules(tmp_path, {"entries": [entry("C", "P|svc|1.0.0", 1),
                                            entry("C", "Q|svc|1.0.0", 2)]}, "--as", "Plant")
        rules = list(Rule.objects.order_by("priority"))
        assert [(r.consumer, r.service_definition, r.service_instance_id, r.priority)
                for r in rules] == [("C", "svc", "P|svc|1.0.0", 1),
                                    ("C", "svc", "Q|svc|1.0.0", 2)]
        assert len({r.id for r in rules}) == 2 and all(r.id.version == 4 for r in rules)
        assert {(r.created_by, r.updated_by) for r in rules} == {("Plant", "Plant")}
        assert rules[0].created_at == rules[0].updated_at == rules[1].created_at
        assert rules[0].created_at.tzinfo is not None

    @pytest.mark.parametrize("data, message", [
        ({"entries": [entry("C", "P|svc|1.0.0", 1), entry("C", "P|svc|1.0.0", 0)]},
         "entries[1]: Priority should be positive"),
        ({"entries": [entry("C", "P|svc|1.0.0", "1")]},
         "entries[0].priority: A valid integer is required."),
        ({"entries": [entry("C", "P|svc|1.0.0", 1), entry("C", "Q|svc|1.0.0", 1)]},
         "entries[1]: Conflicting rules, the combination of the following fields should be "
         "unique: C, service definition: svc, priority: 1"),
        ({"entries": [entry("C", "bad", 1)]},
         "entries[0]: The specified service instance identifier does not match the naming "
         "convention: bad"),
        ({"entries": [None]}, "entries[0]: null entry"),
        ({"candidates": [entry("C", "P|svc|1.0.0", 1), {"consumer": "C\x00"}]},
         "candidates[1].consumer: NUL characters (U+0000) are not allowed."),
    ])
    def test_it_validates_everything_and_writes_nothing_on_error(self, tmp_path, data, message):
        make_rules(("Stored", "P|svc|1.0.0", 1))
        lines, error = refused_import(tmp_path, data)
        assert lines == [message]
        assert error == f"1 bad entry in {tmp_path / 'import.json'}, nothing imported."
        assert keys() == {("Stored", "P|svc|1.0.0", 1)}

    def test_it_lists_every_bad_entry_at_once_in_file_order(self, tmp_path):
        make_rules(("Stored", "P|svc|1.0.0", 1))
        data = {"entries": [
            entry("Stored", "Q|svc|1.0.0", 1),  # differs from the stored rule
            entry("C", "P|svc|1.0.0", 0),
            entry("C", "P|svc|1.0.0", 1),
            entry("C", "P|svc|1.0.0", "x"),
            entry("c", "Q|svc|1.0.0", 1),  # the key of entries[2] once normalized
            entry("D", "bad", 1),
            entry("E", "P|svc|1.0.0", 1),  # good
            {"consumer": "F\x00", "serviceInstanceId": "P|svc|1.0.0", "priority": 1},
        ]}
        lines, error = refused_import(tmp_path, data)
        assert lines == [
            "entries[0]: Differs from the stored rule: Stored → Q|svc|1.0.0 (priority 1), was "
            "P|svc|1.0.0",
            "entries[1]: Priority should be positive",
            "entries[3].priority: A valid integer is required.",
            "entries[4]: Conflicting rules, the combination of the following fields should be "
            "unique: C, service definition: svc, priority: 1",
            "entries[5]: The specified service instance identifier does not match the naming "
            "convention: bad",
            "entries[7].consumer: NUL characters (U+0000) are not allowed."]
        assert error == (f"6 bad entries in {tmp_path / 'import.json'}, nothing imported. Run "
                         "with --update to overwrite the 1 that differ (--dry-run lists every "
                         "change).")
        assert keys() == {("Stored", "P|svc|1.0.0", 1)}
        lines, error = refused_import(tmp_path, data, "--update")  # differing is allowed now
        assert len(lines) == 5 and lines[0].startswith("entries[1]: ")
        assert error == f"5 bad entries in {tmp_path / 'import.json'}, nothing imported."
        lines, _ = refused_import(tmp_path, data, "--dry-run")  # a dry run lists them too
        assert len(lines) == 5
        assert keys() == {("Stored", "P|svc|1.0.0", 1)}

    def test_each_bad_entry_is_one_line(self, tmp_path):
        lines, _ = refused_import(tmp_path, {"entries": [entry("C", "bad\nid", 1)]})
        assert lines == ["entries[0]: The specified service instance identifier does not match "
                         "the naming convention: bad\\nid"]

    def test_it_refuses_an_unreadable_file(self, tmp_path):
        source = tmp_path / "broken.json"
        source.write_text("{not json")
        with pytest.raises(CommandError, match="Cannot read"):
            call_command("import_rules", str(source), stderr=io.StringIO())

    def test_it_refuses_an_invalid_requester(self, tmp_path):
        with pytest.raises(CommandError, match="--as: The specified system name"):
            import_rules(tmp_path, {"entries": []}, "--as", "2nd")


class Terminal(io.StringIO):
    """Standard input of an operator at a terminal, who types `answer`."""

    def isatty(self) -> bool:
        return True


def run_import(tmp_path, data, *args: str, **kwargs) -> tuple[str, str]:
    """import_rules' standard output and error."""
    source = tmp_path / "import.json"
    source.write_text(json.dumps(data))
    out, err = io.StringIO(), io.StringIO()
    call_command("import_rules", str(source), *args, stdout=out, stderr=err, **kwargs)
    return out.getvalue(), err.getvalue()


def rows() -> list[tuple]:
    return list(Rule.objects.order_by("consumer", "priority").values_list(
        "id", "consumer", "service_instance_id", "priority", "updated_by", "updated_at"))


class ImportRulesIdempotenceTests:
    @pytest.fixture
    def stored(self):
        return make_rules(("C", "P|svc|1.0.0", 1), ("C", "Q|svc|1.0.0", 2), ("D", "P|svc|1.0.0", 1))

    def test_it_reimports_its_own_export_as_a_no_op(self, tmp_path, stored):
        before = rows()
        _, err = run_import(tmp_path, export(tmp_path))
        assert "Imported 3 rule(s): 0 created, 0 updated, 3 unchanged, 0 removed." in err
        assert rows() == before

    def test_it_prints_the_plan_and_writes_nothing_on_a_dry_run(self, tmp_path, stored):
        before = rows()
        data = {"entries": [entry("C", "P|svc|1.0.0", 1), entry("C", "R|svc|1.0.0", 2),
                            entry("E", "P|svc|1.0.0", 1)]}
        out, _ = run_import(tmp_path, data, "--dry-run", "--replace", verbosity=2)
        assert out.splitlines() == [
            "To create: 1 rule(s)", "  + E → P|svc|1.0.0 (priority 1)",
            "To update: 1 rule(s)", "  ~ C → R|svc|1.0.0 (priority 2), was Q|svc|1.0.0",
            "Unchanged: 1 rule(s)", "  = C → P|svc|1.0.0 (priority 1)",
            "To remove: 1 rule(s)", "  - D → P|svc|1.0.0 (priority 1)",
            "Dry run: nothing written."]
        assert rows() == before

    def test_it_updates_a_changed_rule_only_when_asked(self, tmp_path, stored):
        data = {"entries": [entry("C", "R|svc|1.0.0", 2)]}
        lines, _ = refused_import(tmp_path, data)
        assert lines == ["entries[0]: Differs from the stored rule: C → R|svc|1.0.0 (priority 2), "
                         "was Q|svc|1.0.0"]
        assert keys() == {(r.consumer, r.service_instance_id, r.priority) for r in stored}
        _, err = run_import(tmp_path, data, "--update", "--as", "PlantAdmin")
        assert "0 created, 1 updated, 0 unchanged, 0 removed." in err
        changed = Rule.objects.get(pk=stored[1].pk)
        assert (changed.service_instance_id, changed.updated_by) == ("R|svc|1.0.0", "PlantAdmin")
        assert changed.created_by == "Sysop"

    def test_it_refuses_to_replace_without_a_terminal_or_yes(self, tmp_path, stored):
        before = rows()
        with pytest.raises(CommandError, match="--replace would remove 2 rule"):
            run_import(tmp_path, {"entries": [entry("C", "P|svc|1.0.0", 1)]}, "--replace")
        assert rows() == before

    def test_it_replaces_when_the_operator_confirms(self, tmp_path, stored):
        data = {"entries": [entry("C", "P|svc|1.0.0", 1)]}
        with pytest.raises(CommandError, match="Not confirmed"):
            run_import(tmp_path, data, "--replace", stdin=Terminal("no\n"))
        assert len(rows()) == 3
        out, _ = run_import(tmp_path, data, "--replace", stdin=Terminal("yes\n"))
        assert "  - C → Q|svc|1.0.0 (priority 2)\n  - D → P|svc|1.0.0 (priority 1)" in out
        assert keys() == {("C", "P|svc|1.0.0", 1)}

    def test_it_imports_nothing_when_the_rules_change_before_the_answer(self, tmp_path, stored):
        class Meanwhile(Terminal):
            def readline(self) -> str:
                make_rules(("F", "P|svc|1.0.0", 1))  # another operator, while we read the list
                return "yes\n"

        with pytest.raises(CommandError, match="The stored rules changed since the preview"):
            run_import(tmp_path, {"entries": [entry("C", "P|svc|1.0.0", 1)]}, "--replace",
                       stdin=Meanwhile())
        assert len(rows()) == 4

    def test_it_writes_nothing_from_a_malformed_file(self, tmp_path, stored):
        before = rows()
        (tmp_path / "import.json").write_text('{"entries": [')
        with pytest.raises(CommandError, match="Cannot read .*import.json: Expecting"):
            call_command("import_rules", str(tmp_path / "import.json"), "--replace", "--yes",
                         stderr=io.StringIO())
        assert rows() == before


@pytest.mark.django_db(transaction=True)
class ImportRulesConcurrentWriterTests:
    def test_it_reports_a_rule_set_another_writer_holds_as_a_command_error(self, tmp_path):
        """Another session holds the rule set's lock longer than this one waits: the import
        ends with a command error and writes nothing (it used to end in a traceback)."""
        import psycopg
        from django.db import connection

        from database.advisory_locks import advisory_key

        settings = connection.settings_dict
        other = psycopg.connect(host=settings["HOST"] or "127.0.0.1", port=settings["PORT"] or 5432,
                                user=settings["USER"], dbname=settings["NAME"], autocommit=True)
        try:
            # The key store.services.locks.rule_sets_lock takes for the rule set (C, svc).
            other.execute("SELECT pg_advisory_lock(%s)", [advisory_key("rule-set", "C\0svc")])
            with connection.cursor() as cursor:
                cursor.execute("SET lock_timeout = '200ms'")
            with pytest.raises(CommandError, match="Nothing imported: .*lock timeout"):
                import_rules(tmp_path, {"entries": [entry("C", "P|svc|1.0.0", 1)]})
        finally:
            other.close()
            with connection.cursor() as cursor:
                cursor.execute("RESET lock_timeout")
        assert keys() == set()


class ImportPaceTests:
    """An import from the command line yields to the service (docs/rule-store.md,
    "Importing on a live plant")."""

    def test_after_each_slice_it_pauses_as_long_as_it_worked_times_the_pace(self):
        ticks = itertools.count(100.0, 0.5)  # each look at the clock half a second later
        pauses = []
        previous = signal.getsignal(signal.SIGALRM)
        with importing.Yielding(pace=2, slice_seconds=0.01, pause=pauses.append,
                                clock=lambda: next(ticks)):
            busy_until(lambda: len(pauses) >= 3)
        # armed at t, the handler looks at t + 0.5: 0.5 s worked, paused 2 × as long
        assert pauses[:3] == [1.0, 1.0, 1.0]
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
        assert signal.getsignal(signal.SIGALRM) is previous

    def test_it_pauses_on_the_real_clock_and_not_while_suspended(self):
        pauses = []
        with importing.Yielding(pace=1, slice_seconds=0.02, pause=pauses.append) as yielding:
            busy_until(lambda: len(pauses) >= 2)
            assert all(0.02 <= pause < 1 for pause in pauses)
            with yielding.suspended():  # the operator answering the confirmation question
                before = len(pauses)
                time.sleep(0.1)
                assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
                assert len(pauses) == before
            busy_until(lambda: len(pauses) > before)
            assert pauses[before] < 0.1  # the suspended time is not counted as work

    @pytest.mark.django_db(transaction=True)  # the command closes its connection at the end
    @pytest.mark.parametrize("flags, yielded", [((), 1), (("--full-speed",), 0)])
    def test_from_the_command_line_it_yields_unless_at_full_speed(self, tmp_path, monkeypatch,
                                                                  flags, yielded):
        entered = []

        class Recorded(importing.Yielding):
            def __enter__(self):
                entered.append(signal.getitimer(signal.ITIMER_REAL))
                return super().__enter__()

        monkeypatch.setattr(importing, "Yielding", Recorded)
        monkeypatch.setattr(importing.os, "nice", lambda increment: None)
        source = tmp_path / "import.json"
        source.write_text(json.dumps({"entries": [entry("C", "P|svc|1.0.0", 1)]}))
        ManagementUtility(["manage.py", "import_rules", str(source), *flags]).execute()
        assert len(entered) == yielded
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # off again afterwards
        assert Rule.objects.count() == 1

    @pytest.mark.django_db(transaction=True)  # the command closes its connection at the end
    @pytest.mark.parametrize("flags, niceness", [((), [importing.NICENESS]),
                                                 (("--full-speed",), [])])
    def test_from_the_command_line_it_runs_at_a_lower_priority(self, tmp_path, monkeypatch,
                                                                flags, niceness):
        asked = []
        monkeypatch.setattr(importing.os, "nice", asked.append)
        source = tmp_path / "import.json"
        source.write_text(json.dumps({"entries": [entry("C", "P|svc|1.0.0", 1)]}))
        ManagementUtility(["manage.py", "import_rules", str(source), *flags]).execute()
        assert asked == niceness
        assert Rule.objects.count() == 1
