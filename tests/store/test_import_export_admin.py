import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from store.models import Rule, ServiceInstance
from tests.factories import make_instances, make_rules
from tests.store.helpers import entry, instance_body, mqtt_interface

pytestmark = pytest.mark.django_db

RULES, INSTANCES = "/admin/store/rule/", "/admin/store/serviceinstance/"


def upload(data, name: str = "rules.json") -> SimpleUploadedFile:
    content = data if isinstance(data, bytes) else json.dumps(data).encode()
    return SimpleUploadedFile(name, content, content_type="application/json")


def preview(client, changelist: str, data, **flags):
    return client.post(f"{changelist}import/", {"file": upload(data), **flags})


def confirm(client, changelist: str, response):
    return client.post(f"{changelist}import/confirm/", {"digest": response.context["plan"].digest})


def errors(response) -> list[str]:
    """The form's errors above its fields (the admin's errorlist), after the error note."""
    html = response.content.decode()
    assert '<p class="errornote">' in html and '<ul class="errorlist nonfield">' in html
    return list(response.context["form"].non_field_errors())


def keys() -> set[tuple]:
    return set(Rule.objects.values_list("consumer", "service_instance_id", "priority"))


def staff(*codenames: str):
    user = get_user_model().objects.create_user("operator", password="x", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    return user


def command_export(name: str) -> bytes:
    out = io.StringIO()
    call_command(name, stdout=out, stderr=io.StringIO())
    return out.getvalue().encode()


class RuleAdminImportTests:
    @pytest.fixture
    def stored(self):
        return make_rules(("C", "P|svc|1.0.0", 1), ("C", "Q|svc|1.0.0", 2), ("D", "P|svc|1.0.0", 1))

    def test_it_shows_the_buttons_on_the_change_list(self, admin_client, stored):
        html = admin_client.get(RULES).content.decode()
        assert f'href="{RULES}import/"' in html and f'href="{RULES}export/"' in html
        page = admin_client.get(f"{RULES}import/")
        assert page.status_code == 200 and 'type="file" name="file"' in page.content.decode()

    def test_it_previews_then_imports_on_confirmation(self, admin_client, admin_user, stored):
        data = {"entries": [entry("C", "P|svc|1.0.0", 1), entry("C", "R|svc|1.0.0", 2),
                            entry("E", "P|svc|1.0.0", 1)]}
        response = preview(admin_client, RULES, data, update="on", replace="on")
        assert response.status_code == 200
        plan = response.context["plan"]
        assert (plan.created, plan.updated, plan.unchanged, plan.removed) == (
            ["E → P|svc|1.0.0 (priority 1)"], ["C → R|svc|1.0.0 (priority 2), was Q|svc|1.0.0"],
            ["C → P|svc|1.0.0 (priority 1)"], ["D → P|svc|1.0.0 (priority 1)"])
        html = response.content.decode()
        assert "1 to create, 1 to update, 1 unchanged, 1 to remove" in html
        assert "Confirm import" in html
        assert len(keys()) == 3  # a preview writes nothing
        response = confirm(admin_client, RULES, response)
        assert response.status_code == 302 and response.url == RULES
        assert keys() == {("C", "P|svc|1.0.0", 1), ("C", "R|svc|1.0.0", 2), ("E", "P|svc|1.0.0", 1)}
        assert Rule.objects.get(consumer="E").created_by == admin_user.username
        page = admin_client.get(RULES).content.decode()
        assert "Imported rules.json: 1 created, 1 updated, 1 unchanged, 1 removed." in page

    def test_it_finds_nothing_to_change_in_its_own_export(self, admin_client, stored):
        export = b"".join(admin_client.get(f"{RULES}export/").streaming_content)
        response = preview(admin_client, RULES, export)
        summary = response.context["plan"].summary
        assert summary == "0 to create, 0 to update, 3 unchanged, 0 to remove"
        assert "Nothing to change" in response.content.decode()
        assert "Confirm import" not in response.content.decode()

    def test_it_refuses_changed_rules_unless_updates_are_ticked(self, admin_client, stored):
        data = {"entries": [entry("C", "R|svc|1.0.0", 2)]}
        response = preview(admin_client, RULES, data)
        assert response.context["plan"] is None
        assert errors(response) == [
            "1 bad entry in rules.json, nothing imported. Tick “Update entries that differ” to "
            "overwrite the 1 that differ.",
            "entries[0]: Differs from the stored rule: C → R|svc|1.0.0 (priority 2), was "
            "Q|svc|1.0.0"]
        assert "Confirm import" not in response.content.decode()
        response = admin_client.post(f"{RULES}import/confirm/", {"digest": "x"})  # hand-made
        assert response.status_code == 302 and response.url == f"{RULES}import/"
        assert ("C", "Q|svc|1.0.0", 2) in keys()
        response = preview(admin_client, RULES, data, update="on")
        assert response.context["plan"].updated == [
            "C → R|svc|1.0.0 (priority 2), was Q|svc|1.0.0"]

    def test_it_lists_every_bad_entry_at_once(self, admin_client, stored):
        data = {"entries": [entry("C", "R|svc|1.0.0", 2), entry("E", "P|svc|1.0.0", 1),
                            entry("E", "P|svc|1.0.0", 0), entry("E", "P|svc|1.0.0", "2"),
                            entry("e", "Q|svc|1.0.0", 1), entry("2nd", "P|svc|1.0.0", 1)]}
        response = preview(admin_client, RULES, data, replace="on")
        assert errors(response) == [
            "5 bad entries in rules.json, nothing imported. Tick “Update entries that differ” "
            "to overwrite the 1 that differ.",
            "entries[0]: Differs from the stored rule: C → R|svc|1.0.0 (priority 2), was "
            "Q|svc|1.0.0",
            "entries[2]: Priority should be positive",
            "entries[3].priority: A valid integer is required.",
            "entries[4]: Conflicting rules, the combination of the following fields should be "
            "unique: E, service definition: svc, priority: 1",
            "entries[5]: The specified system name does not match the naming convention: 2nd"]
        assert len(keys()) == 3

    def test_it_lists_the_first_bad_entries_and_counts_the_rest(self, admin_client, stored,
                                                               monkeypatch):
        monkeypatch.setattr("store.admin_import.SHOWN", 2)
        data = {"entries": [entry(f"C{n}", "P|svc|1.0.0", 0) for n in range(5)]}
        assert errors(preview(admin_client, RULES, data)) == [
            "5 bad entries in rules.json, nothing imported.",
            "entries[0]: Priority should be positive", "entries[1]: Priority should be positive",
            "… and 3 more: manage.py import_rules FILE --dry-run lists them all."]

    def test_the_import_page_is_laid_out_as_the_admin_s_change_forms(self, admin_client):
        page = admin_client.get(f"{RULES}import/")
        html = page.content.decode()
        assert '<body class=" app-store model-rule change-form"' in html
        assert "admin/css/forms.css" in html
        assert ('<div class="breadcrumbs">\n<a href="/admin/">Home</a>\n&rsaquo; <a '
                'href="/admin/store/">Store</a>\n&rsaquo; <a href="/admin/store/rule/">Rules</a>'
                "\n&rsaquo; Import\n</div>") in html
        assert '<fieldset class="module aligned ">' in html
        assert html.count('<div class="form-row') == 3
        assert '<div class="form-row field-file">' in html
        assert '<div class="flex-container checkbox-row">' in html  # the two choices
        assert '<div class="help" id="id_file_helptext">' in html
        assert '<div class="submit-row">' in html and 'class="default" value="Preview"' in html
        assert "<title>Import rules | Service Orchestration admin</title>" in html
        assert "errornote" not in html
        page = admin_client.post(f"{RULES}import/", {"replace": "on"})  # no file
        html = page.content.decode()
        assert '<p class="errornote">\n    Please correct the error below.' in html
        assert '<div class="form-row errors field-file">' in html
        assert '<ul class="errorlist" id="id_file_error"><li>This field is required.</li>' in html
        assert "<title>Error: Import rules | Service Orchestration admin</title>" in html

    def test_the_preview_confirms_in_a_submit_row(self, admin_client, stored):
        response = preview(admin_client, RULES, {"entries": [entry("E", "P|svc|1.0.0", 1)]})
        html = response.content.decode()
        assert '<div class="module" id="import-preview">' in html
        confirm_form = html[html.index('id="rule_import_confirm"'):]
        assert confirm_form.index('<div class="submit-row">') < confirm_form.index(
            'value="Confirm import"') < confirm_form.index('class="closelink">Cancel</a>')

    def test_it_refuses_a_confirmation_when_the_rules_changed_since_the_preview(self, admin_client,
                                                                                 stored):
        response = preview(admin_client, RULES, {"entries": [entry("E", "P|svc|1.0.0", 1)]},
                           replace="on")
        make_rules(("F", "P|svc|1.0.0", 1))
        confirm(admin_client, RULES, response)
        assert ("E", "P|svc|1.0.0", 1) not in keys() and len(keys()) == 4
        page = admin_client.get(f"{RULES}import/").content.decode()
        assert "The stored rules changed since the preview" in page

    @pytest.mark.parametrize("content, message", [
        (b"{not json", "Cannot read rules.json: Expecting property name"),
        (b"\xff", "Cannot read rules.json: &#x27;utf-8&#x27; codec can&#x27;t decode"),
        (json.dumps({"entries": [entry("C", "P|svc|1.0.0", 0)]}).encode(),
         "entries[0]: Priority should be positive"),
    ])
    def test_it_shows_what_is_wrong_with_a_file(self, admin_client, stored, content, message):
        response = preview(admin_client, RULES, content, replace="on")
        assert response.status_code == 200 and response.context["plan"] is None
        assert message in response.content.decode()
        assert '<ul class="errorlist nonfield">' in response.content.decode()
        assert len(keys()) == 3

    def test_it_lets_only_staff_who_may_add_change_and_delete_import(self, client, stored):
        client.force_login(staff("view_rule", "add_rule", "change_rule"))
        assert f"{RULES}import/" not in client.get(RULES).content.decode()
        assert client.get(f"{RULES}import/").status_code == 403
        response = client.post(f"{RULES}import/", {"file": upload({"entries": []}),
                                                   "replace": "on"})
        assert response.status_code == 403
        assert client.post(f"{RULES}import/confirm/", {"digest": "x"}).status_code == 403
        assert len(keys()) == 3
        exported = client.get(f"{RULES}export/")
        assert exported.status_code == 200  # viewing is enough
        exported.close()  # as a server does once it has written it

    def test_it_exports_only_to_staff_who_may_view(self, client, stored):
        client.force_login(staff())
        assert client.get(f"{RULES}export/").status_code == 403

    def test_it_exports_what_the_command_exports(self, admin_client, stored):
        response = admin_client.get(f"{RULES}export/")
        assert response["Content-Disposition"] == 'attachment; filename="rules.json"'
        assert b"".join(response.streaming_content) == command_export("export_rules")


class InstanceAdminImportTests:
    def test_it_previews_then_imports_on_confirmation(self, admin_client):
        make_instances(instance_body("Alpha"), instance_body("Beta"))
        data = {"instances": [instance_body("Alpha", interfaces=[mqtt_interface()]),
                              instance_body("Gamma")]}
        response = preview(admin_client, INSTANCES, data, update="on", replace="on")
        plan = response.context["plan"]
        assert (plan.created, plan.updated, plan.unchanged, plan.removed) == (
            ["Gamma|temperatureInfo|1.0.0"], ["Alpha|temperatureInfo|1.0.0 (interfaces)"], [],
            ["Beta|temperatureInfo|1.0.0"])
        assert ServiceInstance.objects.count() == 2
        assert confirm(admin_client, INSTANCES, response).status_code == 302
        assert sorted(ServiceInstance.objects.values_list("provider", flat=True)) == ["Alpha",
                                                                                     "Gamma"]
        alpha = ServiceInstance.objects.get(provider="Alpha")
        assert alpha.interfaces.get().template_name == "generic_mqtt"

    def test_it_exports_what_the_command_exports(self, admin_client):
        make_instances(instance_body("Alpha"), instance_body("Beta"))
        response = admin_client.get(f"{INSTANCES}export/")
        assert response["Content-Disposition"] == 'attachment; filename="instances.json"'
        assert b"".join(response.streaming_content) == command_export("export_instances")

    def test_it_refuses_staff_without_delete_permission(self, client):
        client.force_login(staff("view_serviceinstance", "add_serviceinstance",
                                 "change_serviceinstance"))
        assert client.get(f"{INSTANCES}import/").status_code == 403
