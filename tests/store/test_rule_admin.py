import pytest

from store.models import Rule
from tests.factories import make_rules
from tests.subscriptions.helpers import feed_skip, feed_unread

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/store/rule/"
ADD = "/admin/store/rule/add/"


def change_url(rule: Rule) -> str:
    return f"/admin/store/rule/{rule.pk}/change/"


@pytest.fixture
def rules():
    return make_rules(("Consumer1", "Provider1|serviceDef1|1.0.0", 1),
                      ("Consumer1", "Provider2|serviceDef1|1.0.0", 2),
                      ("Consumer2", "Provider1|serviceDef2|1.0.0", 1))


def listed(response) -> set[str]:
    assert response.status_code == 200
    return {str(rule.pk) for rule in response.context["cl"].result_list}


class RuleAdminTests:
    def test_it_lists_rules_filtered_by_normalized_consumer_and_service(self, admin_client, rules):
        r1, r2, r3 = rules
        assert listed(admin_client.get(CHANGELIST)) == {str(r.pk) for r in rules}
        assert listed(admin_client.get(CHANGELIST, {"consumer": "consumer-1"})) == {str(r1.pk),
                                                                                    str(r2.pk)}
        assert listed(admin_client.get(CHANGELIST, {"service_definition": "service_def2"})) == {
            str(r3.pk)}
        both = {"consumer": "Consumer1", "service_definition": "serviceDef2"}
        assert listed(admin_client.get(CHANGELIST, both)) == set()

    def test_it_keeps_other_filters_in_the_filter_form(self, admin_client, rules):
        response = admin_client.get(CHANGELIST, {"consumer": "Consumer1", "q": "Provider2"})
        assert listed(response) == {str(rules[1].pk)}
        html = response.content.decode()
        assert 'name="consumer" value="Consumer1"' in html
        assert 'type="hidden" name="q" value="Provider2"' in html

    def test_it_searches_instance_ids(self, admin_client, rules):
        assert listed(admin_client.get(CHANGELIST, {"q": "Provider2"})) == {str(rules[1].pk)}

    def test_it_adds_a_normalized_rule_through_the_service(self, admin_client, admin_user):
        response = admin_client.post(ADD, {"consumer": "temperature-consumer",
                                           "service_instance_id": "provider|temp_info|2",
                                           "priority": 4})
        assert response.status_code == 302, response.context["adminform"].form.errors
        rule = Rule.objects.get()
        assert (rule.consumer, rule.service_definition, rule.service_instance_id, rule.priority) == (
            "TemperatureConsumer", "tempInfo", "Provider|tempInfo|2.0.0", 4)
        assert rule.created_by == rule.updated_by == admin_user.username
        assert rule.created_at == rule.updated_at
        # in the change feed for the subscriptions
        assert [change.consumer for change in feed_unread()] == ["TemperatureConsumer"]

    @pytest.mark.parametrize("form, message", [
        ({"consumer": "Consumer1", "service_instance_id": "Other|serviceDef1|1.0.0",
          "priority": 1}, "There is already an existing entity with consumer name: Consumer1, "
                          "service definition: serviceDef1, priority: 1"),
        ({"consumer": "inv@lid", "service_instance_id": "P|svc|1.0.0", "priority": 1},
         "The specified system name does not match the naming convention: Inv@lid"),
        ({"consumer": "C", "service_instance_id": "P||1.0.0", "priority": 1},
         "The specified service instance identifier does not match the naming convention: "
         "P||1.0.0"),
    ])  # a bad priority is the priority field's error (test_rule_admin_forms.py)
    def test_it_refuses_what_the_api_refuses(self, admin_client, rules, form, message):
        response = admin_client.post(ADD, form)
        assert response.status_code == 200
        assert message in response.context["adminform"].form.non_field_errors()
        assert Rule.objects.count() == 3

    def test_it_changes_the_priority_only(self, admin_client, admin_user, rules):
        r1 = rules[0]
        response = admin_client.post(change_url(r1), {"priority": 9, "consumer": "Hacker"})
        assert response.status_code == 302
        stored = Rule.objects.get(pk=r1.pk)
        assert (stored.priority, stored.consumer, stored.updated_by) == (9, "Consumer1",
                                                                         admin_user.username)
        assert stored.created_by == "Sysop"

    def test_it_refuses_a_duplicate_priority_on_the_change_form(self, admin_client, rules):
        response = admin_client.post(change_url(rules[0]), {"priority": 2})
        assert response.status_code == 200
        assert Rule.objects.get(pk=rules[0].pk).priority == 1

    def _list_edit(self, admin_client, priorities: dict[Rule, int]):
        data = {"form-TOTAL_FORMS": len(priorities), "form-INITIAL_FORMS": len(priorities),
                "_save": "Save"}
        for index, (rule, priority) in enumerate(priorities.items()):
            data[f"form-{index}-id"] = str(rule.pk)
            data[f"form-{index}-priority"] = priority
        return admin_client.post(CHANGELIST, data)

    def test_it_edits_priorities_in_the_list(self, admin_client, rules):
        r1, r2, r3 = rules
        response = self._list_edit(admin_client, {r1: 5, r2: 2, r3: 1})
        assert response.status_code == 302
        assert Rule.objects.get(pk=r1.pk).priority == 5

    def test_it_refuses_a_duplicate_made_in_the_list(self, admin_client, rules):
        r1, r2, r3 = rules
        response = self._list_edit(admin_client, {r1: 2, r2: 2, r3: 1})
        assert response.status_code == 200
        assert sorted(Rule.objects.values_list("priority", flat=True)) == [1, 1, 2]

    def test_it_deletes_through_the_service(self, admin_client, rules):
        # The subscriptions learn of the consumers whose rules went (the change feed).
        feed_skip()

        def new_changes() -> list[str]:
            consumers = sorted({change.consumer for change in feed_unread()})
            feed_skip()
            return consumers

        response = admin_client.post(CHANGELIST, {"action": "delete_selected", "post": "yes",
                                                  "_selected_action": [str(rules[0].pk),
                                                                       str(rules[1].pk)]})
        assert response.status_code == 302
        assert list(Rule.objects.values_list("pk", flat=True)) == [rules[2].pk]
        assert new_changes() == ["Consumer1"]
        response = admin_client.post(f"/admin/store/rule/{rules[2].pk}/delete/", {"post": "yes"})
        assert response.status_code == 302
        assert not Rule.objects.exists()
        assert new_changes() == ["Consumer2"]
