"""Edges of rule create and modify-priorities that the mutation check (docs/testing.md) found
untested: the largest priority, and a stored duplicate given as the first entry."""
import pytest

from store.models import MAX_PRIORITY, Rule
from tests.helpers import as_system, assert_error
from tests.factories import make_rules
from tests.store.helpers import CREATE, MODIFY, entry, post

pytestmark = pytest.mark.django_db


class RuleEdgesApiTests:
    def test_it_creates_a_rule_of_the_largest_priority(self, api):
        response = post(api, CREATE, {"entries": [entry("C1", "P1|svc|1.0.0", MAX_PRIORITY)]})

        assert response.status_code == 201
        assert response.json()["entries"][0]["priority"] == MAX_PRIORITY

    def test_it_refuses_a_stored_rule_given_alone(self, api):
        make_rules(("Consumer1", "Provider1|serviceDef1|1.0.0", 1))

        response = post(api, CREATE, {"entries": [
            entry("Consumer1", "Other|serviceDef1|1.0.0", 1)]})

        assert_error(response, 400, "INVALID_PARAMETER",
                     "There is already an existing entity with consumer name: Consumer1, "
                     "service definition: serviceDef1, priority: 1", f"POST {CREATE}")
        assert Rule.objects.count() == 1

    def test_it_modifies_a_priority_to_the_largest(self, api):
        [rule] = make_rules(("Consumer1", "Provider1|serviceDef1|1.0.0", 1))

        response = api.put(MODIFY, {str(rule.id): MAX_PRIORITY}, format="json",
                           **as_system("Sysop"))

        assert response.status_code == 200
        assert Rule.objects.get(id=rule.id).priority == MAX_PRIORITY
