"""The rule admin for an operator without docs: instance picker, help, readable messages,
unknown-instance warnings and markers, list order and width."""
import pytest
from django.contrib.messages import get_messages

from store.models import Rule
from tests.factories import make_instances, make_rules
from tests.store.helpers import instance_body

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/store/rule/"
ADD = "/admin/store/rule/add/"
NOT_IN_CATALOG = "Not in the service instance catalog"


def warnings_of(response) -> list[str]:
    return [m.message for m in get_messages(response.wsgi_request) if m.level_tag == "warning"]


@pytest.fixture
def catalog():
    return make_instances(instance_body("TemperatureProvider", "temperatureInfo"),
                          instance_body("HumidityProvider", "humidityInfo", "2.0.0"))


class RuleAddFormTests:
    def test_it_offers_the_catalog_instances_and_help(self, admin_client, catalog):
        html = admin_client.get(ADD).content.decode()
        assert 'list="id_service_instance_id_suggestions"' in html
        assert '<datalist id="id_service_instance_id_suggestions">' in html
        for instance_id in ("TemperatureProvider|temperatureInfo|1.0.0",
                            "HumidityProvider|humidityInfo|2.0.0"):
            assert f'<option value="{instance_id}"></option>' in html
        for help_text in ("The consuming system's name", "Provider|serviceDefinition|version",
                          "1 is tried first"):
            assert help_text in html, help_text

    def test_it_saves_a_rule_for_a_known_instance_without_warning(self, admin_client, catalog):
        response = admin_client.post(ADD, {"consumer": "Consumer1", "priority": 1,
                                           "service_instance_id":
                                               "TemperatureProvider|temperatureInfo|1.0.0"},
                                     follow=True)
        assert response.status_code == 200
        assert Rule.objects.get().service_instance_id == "TemperatureProvider|temperatureInfo|1.0.0"
        assert warnings_of(response) == []
        assert NOT_IN_CATALOG not in response.content.decode()

    def test_it_saves_a_rule_for_an_unknown_instance_with_a_warning(self, admin_client, catalog):
        response = admin_client.post(ADD, {"consumer": "Consumer1", "priority": 1,
                                           "service_instance_id": "Later|laterInfo|1.0.0"},
                                     follow=True)
        assert response.status_code == 200
        rule = Rule.objects.get()
        assert rule.service_instance_id == "Later|laterInfo|1.0.0"
        assert len(warnings_of(response)) == 1
        assert warnings_of(response)[0].startswith(f"Later|laterInfo|1.0.0: {NOT_IN_CATALOG}")
        assert NOT_IN_CATALOG in response.content.decode()
        change = admin_client.get(f"/admin/store/rule/{rule.pk}/change/").content.decode()
        assert f"⚠ {NOT_IN_CATALOG}" in change

    @pytest.mark.parametrize("priority, message", [
        (0, "Priority should be positive"),
        (-3, "Priority should be positive"),
        (2_147_483_648, "Priority should not be greater than 2147483647"),
        ("first", "Priority must be a positive whole number"),
        ("", "Priority is missing"),
    ])
    def test_it_explains_a_bad_priority_and_writes_nothing(self, admin_client, catalog,
                                                          priority, message):
        response = admin_client.post(ADD, {"consumer": "Consumer1", "priority": priority,
                                           "service_instance_id": "P|svc|1.0.0"})
        assert response.status_code == 200
        assert response.context["adminform"].form.errors == {"priority": [message]}
        html = response.content.decode()
        assert message in html
        assert "rule_priority_positive" not in html and "Constraint" not in html
        assert not Rule.objects.exists()

    def test_it_explains_a_bad_priority_on_the_change_form_and_in_the_list(self, admin_client):
        rule, = make_rules(("Consumer1", "P|svc|1.0.0", 1))
        response = admin_client.post(f"/admin/store/rule/{rule.pk}/change/", {"priority": 0})
        assert response.context["adminform"].form.errors == {
            "priority": ["Priority should be positive"]}
        response = admin_client.post(CHANGELIST, {
            "form-TOTAL_FORMS": 1, "form-INITIAL_FORMS": 1, "_save": "Save",
            "form-0-id": str(rule.pk), "form-0-priority": 0})
        assert response.status_code == 200
        html = response.content.decode()
        assert "Priority should be positive" in html and "Constraint" not in html
        assert Rule.objects.get().priority == 1


def listed(response) -> list[tuple[str, str, int]]:
    assert response.status_code == 200
    return [(r.consumer, r.service_instance_id, r.priority)
            for r in response.context["cl"].result_list]


class RuleListTests:
    @pytest.fixture
    def rules(self, catalog):
        return make_rules(("Consumer2", "TemperatureProvider|temperatureInfo|1.0.0", 1),
                          ("Consumer1", "HumidityProvider|humidityInfo|2.0.0", 2),
                          ("Consumer1", "Later|temperatureInfo|1.0.0", 1),
                          ("Consumer1", "TemperatureProvider|temperatureInfo|1.0.0", 3))

    def test_it_lists_a_consumers_rules_in_priority_order(self, admin_client, rules):
        assert listed(admin_client.get(CHANGELIST)) == [
            ("Consumer1", "Later|temperatureInfo|1.0.0", 1),
            ("Consumer1", "HumidityProvider|humidityInfo|2.0.0", 2),
            ("Consumer1", "TemperatureProvider|temperatureInfo|1.0.0", 3),
            ("Consumer2", "TemperatureProvider|temperatureInfo|1.0.0", 1)]

    def test_it_marks_rules_whose_instance_is_not_in_the_catalog(self, admin_client, rules):
        html = admin_client.get(CHANGELIST).content.decode()
        assert html.count("⚠&nbsp;unknown") == 1
        unknown = admin_client.get(CHANGELIST, {"in_catalog": "no"})
        assert listed(unknown) == [("Consumer1", "Later|temperatureInfo|1.0.0", 1)]
        assert len(listed(admin_client.get(CHANGELIST, {"in_catalog": "yes"}))) == 3

    def test_it_shows_four_columns_and_long_ids_whole_on_hover(self, admin_client):
        long_id = f"{'Provider' * 7}|{'definition' * 6}|1.0.0"
        make_rules(("C" * 60, long_id, 1))
        response = admin_client.get(CHANGELIST)
        html = response.content.decode()
        assert response.context["cl"].list_display == [
            "action_checkbox", "consumer_short", "instance", "priority", "updated"]
        assert f'<span title="{long_id}">' in html and f">{long_id}<" not in html
        assert f'<span title="{"C" * 60}">{"C" * 21}…</span>' in html
