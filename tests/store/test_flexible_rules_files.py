"""Flexible rules in files and the admin (issue 33): export and import of our own rules,
the import of Arrowhead 4.6 flexible store rules with its dry run, the admin's create and
remove through the flexible rule services."""
import io
import json

import pytest
from django.core.management import CommandError, call_command

from store.models import FlexibleRule
from store.services.flexible_rules import FlexibleRuleDraft, flexible_rule_create_many

pytestmark = pytest.mark.django_db

ARROWHEAD_46 = [
    {"consumerSystem": {"systemName": "temp-consumer", "metadata": {"site": "plant1"}},
     "providerSystem": {"systemName": "temp-sensor"},
     "serviceDefinitionName": "temperature-info", "serviceInterfaceName": "HTTP-SECURE-JSON",
     "serviceMetadata": {"unit": "celsius"}, "priority": 2},
    {"consumerSystem": {"metadata": {"site": "plant2"}},
     "providerSystem": {"metadata": {"vendor": "acme"}},
     "serviceDefinitionName": "temperature-info"},
    {"consumerSystem": {"systemName": "temp-consumer"},
     "providerSystem": {"systemName": "temp-sensor"},
     "serviceDefinitionName": "temperature-info", "serviceInterfaceName": "MQTT-JSON"},
    {"consumerSystem": {"systemName": "temp-consumer"}, "serviceDefinitionName": "x"},
]


def run(*args: str) -> str:
    output = io.StringIO()
    call_command(*args, stdout=output, stderr=io.StringIO())
    return output.getvalue()


def stored() -> list[tuple]:
    return list(FlexibleRule.objects.order_by("priority").values_list(
        "consumer", "consumer_metadata", "provider", "provider_metadata", "service_definition",
        "interface_template", "service_metadata", "priority", "created_by"))


class ArrowheadFourImportTests:
    @pytest.fixture
    def file(self, tmp_path):
        path = tmp_path / "flexible-4.6.json"
        path.write_text(json.dumps({"data": ARROWHEAD_46, "count": 4}))
        return str(path)

    def test_the_dry_run_lists_what_it_would_create_and_what_it_cannot_translate(self, file):
        output = run("import_flexible_rules", file, "--arrowhead-4.6", "--dry-run")
        assert output.splitlines() == [
            "Would create 2 rule(s):",
            '  #1: TempConsumer -> temperatureInfo of TempSensor via generic_https instances '
            '[{"unit": "celsius"}], priority 2',
            '  #2: consumers [{"site": "plant2"}] -> temperatureInfo of providers '
            '[{"vendor": "acme"}], priority 2147483647',
            "Cannot import 2 rule(s):",
            "  #3: interface MQTT-JSON has no Arrowhead 5 interface template (known: "
            "HTTP-INSECURE-JSON, HTTP-SECURE-JSON)",
            "  #4: Provider name or provider metadata requirements are missing",
            "Dry run: nothing written."]
        assert stored() == []

    def test_it_writes_nothing_while_rules_cannot_be_imported(self, file):
        out, err = io.StringIO(), io.StringIO()
        with pytest.raises(CommandError, match="2 rule\\(s\\) cannot be imported"):
            call_command("import_flexible_rules", file, "--arrowhead-4.6", stdout=out,
                         stderr=err)
        assert err.getvalue().splitlines() == [  # every refused rule, one a line
            "#3: interface MQTT-JSON has no Arrowhead 5 interface template (known: "
            "HTTP-INSECURE-JSON, HTTP-SECURE-JSON)",
            "#4: Provider name or provider metadata requirements are missing"]
        assert out.getvalue() == ""
        assert stored() == []

    def test_it_creates_the_translatable_rules_when_told_to_skip_the_others(self, file):
        run("import_flexible_rules", file, "--arrowhead-4.6", "--skip-refused", "--as", "ops")
        assert stored() == [
            ("TempConsumer", [{"site": "plant1"}], "TempSensor", None, "temperatureInfo",
             "generic_https", [{"unit": "celsius"}], 2, "Ops"),
            (None, [{"site": "plant2"}], None, [{"vendor": "acme"}], "temperatureInfo", None,
             None, 2147483647, "Ops")]
        again = run("import_flexible_rules", file, "--arrowhead-4.6", "--skip-refused")
        assert "Stored already, skipped: 2 rule(s): #1, #2" in again
        assert len(stored()) == 2

    @pytest.mark.parametrize("content, flags, message", [
        ('{"data": [], "count": "\\ud800"}', ["--arrowhead-4.6"], "count: Unpaired surrogates"),
        ("{not json", ["--arrowhead-4.6"], "Expecting property name"),
        ('{"rules": []}', ["--arrowhead-4.6"], "An Arrowhead 4.6 file holds a JSON list"),
        ('{"entries": [], "note": "\\u0000"}', [], "note: NUL characters"),
        ('{"entries": {}}', [], "entries: Expected a list of items"),
    ])
    def test_it_refuses_unreadable_files(self, tmp_path, content, flags, message):
        path = tmp_path / "bad.json"
        path.write_text(content)
        with pytest.raises(CommandError, match=message):
            run("import_flexible_rules", str(path), *flags)


class ExportImportTests:
    def test_an_export_imports_back(self, tmp_path):
        flexible_rule_create_many(drafts=[
            FlexibleRuleDraft(consumer="Car1", provider_metadata=[{}],
                              service_definition="serviceOne", min_version="1.0",
                              priority=3),
            FlexibleRuleDraft(consumer_metadata=[{"site": "a"}], provider="P",
                              service_definition="serviceTwo")], requester="Sysop", limit=None)
        before = stored()
        path = tmp_path / "export.json"
        call_command("export_flexible_rules", str(path), stdout=io.StringIO(),
                     stderr=io.StringIO())
        exported = json.loads(path.read_text())
        assert [e for e in exported["entries"] if e.get("consumer")] == [{"consumer": "Car1",
                                          "providerMetadataRequirements": [{}],
                                          "serviceDefinition": "serviceOne",
                                          "minVersion": "1.0.0", "priority": 3}]
        FlexibleRule.objects.all().delete()
        assert "Created 2 rule(s)." in run("import_flexible_rules", str(path))
        assert stored() == before

    def test_an_invalid_rule_in_our_format_refuses_the_import(self, tmp_path):
        path = tmp_path / "rules.json"
        path.write_text(json.dumps({"entries": [
            {"consumer": "Car1", "provider": "P", "serviceDefinition": "s"},
            {"consumer": "Car1"},
            {"consumer": "Car1", "provider": "P", "serviceDefinition": "s", "priority": "x"},
            {"consumer": "Car\x00", "provider": "P", "serviceDefinition": "s"},
            None]}))
        err = io.StringIO()
        with pytest.raises(CommandError, match="4 rule\\(s\\) cannot be imported"):
            call_command("import_flexible_rules", str(path), stdout=io.StringIO(), stderr=err)
        assert err.getvalue().splitlines() == [
            "#2: Service definition is missing",
            "#3: priority: A valid integer is required.",
            "#4: consumer: NUL characters (U+0000) are not allowed.",
            "#5: null entry"]
        assert stored() == []


class FlexibleRuleAdminTests:
    ADD = "/admin/store/flexiblerule/add/"

    def test_it_creates_and_removes_through_the_services(self, admin_client):
        response = admin_client.post(self.ADD, {
            "consumer": "car-consumer", "consumer_metadata": "null", "provider": "",
            "provider_metadata": '[{"vendor": "acme"}]', "service_definition": "service-one",
            "interface_template": "", "service_metadata": "null", "min_version": "2",
            "max_version": "", "priority": ""})
        assert response.status_code == 302, response.content
        [rule] = FlexibleRule.objects.all()
        assert (rule.consumer, rule.provider_metadata, rule.service_definition,
                rule.min_version, rule.priority) == ("CarConsumer", [{"vendor": "acme"}],
                                                     "serviceOne", "2.0.0", 2147483647)
        assert admin_client.post(f"/admin/store/flexiblerule/{rule.pk}/delete/",
                                 {"post": "yes"}).status_code == 302
        assert not FlexibleRule.objects.exists()

    def test_it_shows_the_apis_messages(self, admin_client):
        response = admin_client.post(self.ADD, {
            "consumer": "car-consumer", "consumer_metadata": "null", "provider": "",
            "provider_metadata": "null", "service_definition": "serviceOne",
            "interface_template": "", "service_metadata": "null", "min_version": "",
            "max_version": "", "priority": "1"})
        assert response.status_code == 200
        assert "Provider name or provider metadata requirements are missing" in \
            response.content.decode()
        assert not FlexibleRule.objects.exists()

    def test_the_list_shows_rules(self, admin_client):
        flexible_rule_create_many(drafts=[FlexibleRuleDraft(
            consumer_metadata=[{"site": "a"}], provider="P", service_definition="serviceTwo")],
            requester="Sysop", limit=None)
        page = admin_client.get("/admin/store/flexiblerule/").content.decode()
        assert "by metadata" in page and "serviceTwo" in page
