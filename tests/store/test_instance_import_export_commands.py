import datetime as dt
import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from store.models import ServiceInstance
from tests.factories import make_instances
from tests.store.helpers import http_interface, instance_body, mqtt_interface

pytestmark = pytest.mark.django_db


def export(tmp_path) -> dict:
    target = tmp_path / "instances.json"
    call_command("export_instances", "--output", str(target), stderr=io.StringIO())
    return json.loads(target.read_text())


def import_file(tmp_path, data, *args: str) -> str:
    source = tmp_path / "import.json"
    source.write_text(json.dumps(data))
    err = io.StringIO()
    call_command("import_instances", str(source), *args, stderr=err)
    return err.getvalue()


def refused_import(tmp_path, data, *args: str) -> tuple[list[str], str]:
    """The lines import_instances writes on stderr before it fails, and its error."""
    source = tmp_path / "import.json"
    source.write_text(json.dumps(data))
    err = io.StringIO()
    with pytest.raises(CommandError) as error:
        call_command("import_instances", str(source), *args, stderr=err)
    return err.getvalue().splitlines(), str(error.value)


def snapshot() -> list[tuple]:
    return [(i.service_instance_id, i.expires_at, i.metadata,
             [(f.template_name, f.protocol, f.policy, f.properties) for f in i.interfaces.all()])
            for i in ServiceInstance.objects.order_by("service_instance_id")]


class InstanceImportExportTests:
    def test_it_round_trips_the_catalog(self, tmp_path):
        expires = (timezone.now() + dt.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        make_instances(instance_body("Alpha", expiresAt=expires),
                       instance_body("Beta", interfaces=[mqtt_interface(), http_interface()]))
        before = snapshot()
        data = export(tmp_path)
        assert [i["systemName"] for i in data["instances"]] == ["Alpha", "Beta"]
        ServiceInstance.objects.all().delete()
        output = import_file(tmp_path, data)
        assert snapshot() == before
        assert "[##############################] 2/2" in output

    def test_it_replaces_the_whole_catalog_when_asked(self, tmp_path):
        make_instances(instance_body("Old"))
        with pytest.raises(CommandError, match="--replace would remove 1 instance"):
            import_file(tmp_path, {"instances": [instance_body("New")]}, "--replace")
        assert list(ServiceInstance.objects.values_list("provider", flat=True)) == ["Old"]
        output = import_file(tmp_path, {"instances": [instance_body("New")]}, "--replace", "--yes")
        assert list(ServiceInstance.objects.values_list("provider", flat=True)) == ["New"]
        assert "1 created, 0 updated, 0 unchanged, 1 removed." in output

    def test_it_reimports_its_own_export_as_a_no_op(self, tmp_path):
        make_instances(instance_body("Alpha"), instance_body("Beta", interfaces=[mqtt_interface()]))
        before = snapshot() + list(ServiceInstance.objects.values_list("updated_at"))
        output = import_file(tmp_path, export(tmp_path))
        assert "Imported 2 instance(s): 0 created, 0 updated, 2 unchanged, 0 removed." in output
        assert snapshot() + list(ServiceInstance.objects.values_list("updated_at")) == before

    def test_it_prints_the_plan_and_writes_nothing_on_a_dry_run(self, tmp_path):
        make_instances(instance_body("Alpha"), instance_body("Beta"), instance_body("Gamma"))
        before = snapshot()
        source = tmp_path / "import.json"
        source.write_text(json.dumps({"instances": [
            instance_body("Alpha"), instance_body("Beta", metadata={"unit": "kelvin"}),
            instance_body("Delta")]}))
        out = io.StringIO()
        call_command("import_instances", str(source), "--dry-run", "--replace", stdout=out)
        assert out.getvalue().splitlines() == [
            "To create: 1 instance(s)", "  + Delta|temperatureInfo|1.0.0",
            "To update: 1 instance(s)", "  ~ Beta|temperatureInfo|1.0.0 (metadata)",
            "Unchanged: 1 instance(s)",
            "To remove: 1 instance(s)", "  - Gamma|temperatureInfo|1.0.0",
            "Dry run: nothing written."]
        assert snapshot() == before

    def test_it_updates_a_changed_instance_only_when_asked(self, tmp_path):
        make_instances(instance_body("Alpha"))
        changed = {"instances": [instance_body("Alpha", interfaces=[mqtt_interface()])]}
        lines, error = refused_import(tmp_path, changed)
        assert lines == ["instances[0]: Differs from the stored instance: "
                         "Alpha|temperatureInfo|1.0.0 (interfaces)"]
        assert error == (f"1 bad entry in {tmp_path / 'import.json'}, nothing imported. Run "
                         "with --update to overwrite the 1 that differ (--dry-run lists every "
                         "change).")
        assert ServiceInstance.objects.get().interfaces.get().template_name == "generic_http"
        output = import_file(tmp_path, changed, "--update")
        assert "0 created, 1 updated, 0 unchanged, 0 removed." in output
        assert ServiceInstance.objects.get().interfaces.get().template_name == "generic_mqtt"

    def test_it_writes_nothing_from_a_malformed_file(self, tmp_path):
        make_instances(instance_body("Stored"))
        source = tmp_path / "import.json"
        source.write_bytes(b'{"instances": [\xff]}')
        with pytest.raises(CommandError, match="Cannot read .*import.json: "):
            call_command("import_instances", str(source), "--replace", "--yes",
                         stderr=io.StringIO())
        assert list(ServiceInstance.objects.values_list("provider", flat=True)) == ["Stored"]

    def test_it_validates_everything_first_and_lists_every_bad_entry(self, tmp_path):
        make_instances(instance_body("Stored"))
        data = {"instances": [instance_body("A"), instance_body("B", interfaces=[]),
                              instance_body("a"), instance_body(5),
                              instance_body("Stored", interfaces=[mqtt_interface()])]}
        lines, error = refused_import(tmp_path, data)
        assert lines == ["instances[1]: Service interface list is empty",
                         "instances[2]: Duplicated instance: A|temperatureInfo|1.0.0",
                         "instances[3].systemName: Not a valid string.",
                         "instances[4]: Differs from the stored instance: "
                         "Stored|temperatureInfo|1.0.0 (interfaces)"]
        assert error.startswith(f"4 bad entries in {tmp_path / 'import.json'}, nothing imported.")
        assert list(ServiceInstance.objects.values_list("provider", flat=True)) == ["Stored"]
