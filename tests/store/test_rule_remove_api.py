import uuid

import pytest

from store.models import Rule
from tests.factories import grant, make_rules
from tests.helpers import SYSOP, as_system, assert_error, assert_forbidden, assert_refused
from tests.store.helpers import BASE, QUERY, REMOVE, stored_rules

pytestmark = pytest.mark.django_db


@pytest.fixture
def rules():
    return make_rules(("C", "P|svc|1.0.0", 1), ("C", "P|svc|1.0.0", 2), ("D", "P|svc|1.0.0", 1))


def remaining() -> set[uuid.UUID]:
    return set(Rule.objects.values_list("id", flat=True))


class RuleRemoveApiTests:
    @pytest.mark.parametrize("path", [REMOVE, QUERY, BASE])
    def test_it_removes_the_listed_rules_on_every_path(self, api, rules, path):
        a, b, c = rules
        response = api.delete(f"{path}?uuids={a.id}&uuids={b.id}", **SYSOP)
        assert response.status_code == 200
        assert response.content == b""
        assert remaining() == {c.id}

    def test_it_accepts_comma_separated_ids(self, api, rules):
        a, b, c = rules
        assert api.delete(f"{REMOVE}?uuids={a.id},{str(b.id).upper()}", **SYSOP).status_code == 200
        assert remaining() == {c.id}

    def test_it_ignores_unknown_ids(self, api, rules):
        response = api.delete(f"{REMOVE}?uuids={rules[0].id}&uuids={uuid.uuid4()}", **SYSOP)
        assert response.status_code == 200
        assert rules[0].id not in remaining() and len(remaining()) == 2

    @pytest.mark.parametrize("query", ["", "?uuids=", "?uuids=&uuids=", "?uuids=,", "?other=1"])
    def test_it_refuses_missing_ids(self, api, rules, query):
        assert_refused(lambda: api.delete(f"{REMOVE}{query}", **SYSOP), "UUIDs are missing",
                       f"DELETE {REMOVE}", state=stored_rules)

    def test_it_refuses_an_invalid_id_and_removes_nothing(self, api, rules):
        assert_refused(lambda: api.delete(f"{REMOVE}?uuids={rules[0].id}&uuids=6-7", **SYSOP),
                       "Invalid UUID: 6-7", f"DELETE {REMOVE}", state=stored_rules)

    @pytest.mark.parametrize("path", [REMOVE, QUERY, BASE])
    def test_it_needs_the_delete_permission(self, api, rules, path):
        url = f"{path}?uuids={rules[0].id}"
        assert_forbidden(api.delete(url, **as_system("Manager")), f"DELETE {path}")
        grant("Manager", "view_rule")
        assert api.delete(url, **as_system("Manager")).status_code == 403
        grant("Manager", "delete_rule")
        assert api.delete(url, **as_system("Manager")).status_code == 200

    def test_it_refuses_other_methods_on_the_remove_path(self, api):
        response = api.post(REMOVE, {}, format="json", **SYSOP)
        assert_error(response, 405, "INVALID_PARAMETER", 'Method "POST" not allowed.',
                     f"POST {REMOVE}")
