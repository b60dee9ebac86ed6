import uuid

import pytest

from store.models import Rule
from tests.factories import grant, make_rules
from tests.helpers import as_system, assert_forbidden, assert_refused
from tests.store.helpers import MODIFY

pytestmark = pytest.mark.django_db

ORIGIN = f"PUT {MODIFY}"


@pytest.fixture
def rules():
    """R1 prio 1, R2 prio 2 for Consumer1/serviceDef1; R3 prio 1 for Consumer2/serviceDef1."""
    return make_rules(("Consumer1", "Provider1|serviceDef1|1.0.0", 1),
                      ("Consumer1", "Provider2|serviceDef1|1.0.0", 2),
                      ("Consumer2", "Provider1|serviceDef1|1.0.0", 1))


def modify(api, body, method="put", headers=None):
    headers = headers or as_system("Sysop")
    return getattr(api, method)(MODIFY, body, format="json", **headers)


def stored_priorities() -> dict[uuid.UUID, int]:
    return dict(Rule.objects.values_list("id", "priority"))


class RuleModifyPrioritiesApiTests:
    def test_it_changes_priorities_and_answers_the_modified_rules(self, api, rules):
        r1, r2, _ = rules
        response = modify(api, {str(r1.id): 10, str(r2.id): 11})
        assert response.status_code == 200
        body = response.json()
        assert body["count"] == 2
        assert [(e["id"], e["priority"]) for e in body["entries"]] == [(str(r1.id), 10),
                                                                      (str(r2.id), 11)]
        assert stored_priorities()[r1.id] == 10 and stored_priorities()[r2.id] == 11

    def test_it_records_who_changed_the_rule_and_when(self, api, rules, settings):
        settings.MANAGEMENT_WHITELIST = ["Manager"]
        r1 = rules[0]
        response = modify(api, {str(r1.id): 7}, headers=as_system("manager"))
        entry = response.json()["entries"][0]
        assert entry["createdBy"] == "Sysop"
        assert entry["updatedBy"] == "Manager"
        assert entry["updatedAt"] > entry["createdAt"]
        stored = Rule.objects.get(id=r1.id)
        assert (stored.updated_by, stored.created_by, stored.created_at) == (
            "Manager", "Sysop", r1.created_at)

    def test_it_swaps_two_priorities_atomically(self, api, rules):
        r1, r2, r3 = rules
        response = modify(api, {str(r1.id): 2, str(r2.id): 1})
        assert response.status_code == 200, response.content
        assert stored_priorities() == {r1.id: 2, r2.id: 1, r3.id: 1}

    def test_it_rotates_priorities_of_a_larger_rule_set(self, api):
        created = make_rules(*[("C", f"P{n}|svc|1.0.0", n) for n in (1, 2, 3)])
        body = {str(created[0].id): 2, str(created[1].id): 3, str(created[2].id): 1}
        assert modify(api, body).status_code == 200
        assert [stored_priorities()[rule.id] for rule in created] == [2, 3, 1]

    def test_it_changes_several_rule_sets_in_one_call(self, api, rules):
        r1, _, r3 = rules
        assert modify(api, {str(r1.id): 5, str(r3.id): 6}).status_code == 200
        assert stored_priorities()[r1.id] == 5 and stored_priorities()[r3.id] == 6

    def test_it_accepts_post_like_put(self, api, rules):
        response = modify(api, {str(rules[0].id): 9}, method="post")
        assert response.status_code == 200
        assert stored_priorities()[rules[0].id] == 9

    def test_it_trims_keys_and_accepts_upper_case(self, api, rules):
        assert modify(api, {f"  {rules[0].id}  ": 7}).status_code == 200
        assert modify(api, {str(rules[0].id).upper(): 8}).status_code == 200
        assert stored_priorities()[rules[0].id] == 8

    def test_it_answers_an_empty_map_with_no_entries(self, api, rules):
        response = modify(api, {})
        assert (response.status_code, response.json()) == (200, {"entries": [], "count": 0})

    def test_it_refuses_an_invalid_uuid(self, api, rules):
        assert_refused(lambda: modify(api, {"6-7": 1}), "Invalid UUID: 6-7", ORIGIN,
                       state=stored_priorities)

    def test_it_refuses_a_null_priority(self, api, rules):
        assert_refused(lambda: modify(api, {str(rules[0].id): None}),
                       "Priority map contains null value", ORIGIN, state=stored_priorities)

    @pytest.mark.parametrize("priority", [0, -5])
    def test_it_refuses_a_non_positive_priority(self, api, rules, priority):
        assert_refused(lambda: modify(api, {str(rules[1].id): 5, str(rules[0].id): priority}),
                       f"Invalid priority: {priority}, should be positive", ORIGIN,
                       state=stored_priorities)

    @pytest.mark.parametrize("priority", ["2", True, 1.5])
    def test_it_refuses_a_priority_of_the_wrong_json_type(self, api, rules, priority):
        key = str(rules[0].id)
        assert_refused(lambda: modify(api, {key: priority}),
                       f"{key}: A valid integer is required.", ORIGIN, state=stored_priorities)

    def test_it_refuses_a_body_that_is_not_an_object(self, api, rules):
        assert_refused(lambda: modify(api, [1, 2]),
                       'Expected a dictionary of items but got type "list".', ORIGIN,
                       state=stored_priorities)

    def test_it_refuses_an_id_without_a_rule_and_changes_nothing(self, api, rules):
        missing = uuid.uuid4()
        assert_refused(lambda: modify(api, {str(rules[0].id): 5, str(missing): 1}),
                       f"Not existing UUID: {missing}", ORIGIN, state=stored_priorities)

    def test_it_refuses_a_resulting_duplicate_and_changes_nothing(self, api, rules):
        r1, _, r3 = rules
        assert_refused(lambda: modify(api, {str(r3.id): 9, str(r1.id): 2}),
                       "Conflicting rules, the combination of the following fields should be "
                       "unique: Consumer1, service definition: serviceDef1, priority: 2",
                       ORIGIN, state=stored_priorities)

    def test_it_refuses_two_rules_of_a_set_moved_to_the_same_priority(self, api, rules):
        r1, r2, _ = rules
        assert_refused(lambda: modify(api, {str(r1.id): 5, str(r2.id): 5}),
                       "Conflicting rules, the combination of the following fields should be "
                       "unique: Consumer1, service definition: serviceDef1, priority: 5",
                       ORIGIN, state=stored_priorities)

    def test_it_refuses_the_same_rule_twice(self, api, rules):
        key = str(rules[0].id)
        assert_refused(lambda: modify(api, {key: 5, key.upper(): 6}), f"Duplicate UUID: {key}",
                       ORIGIN, state=stored_priorities)

    def test_it_needs_the_change_permission(self, api, rules):
        body = {str(rules[0].id): 5}
        assert_forbidden(modify(api, body, headers=as_system("Manager")), ORIGIN)
        grant("Manager", "change_rule")
        assert modify(api, body, headers=as_system("Manager")).status_code == 200
