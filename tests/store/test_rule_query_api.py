import pytest

from store.models import Rule
from tests.factories import grant, make_rules
from tests.helpers import as_system, assert_error, assert_forbidden
from tests.store.helpers import QUERY, post

pytestmark = pytest.mark.django_db

ORIGIN = f"POST {QUERY}"
U1 = "11111111-1111-1111-1111-111111111111"


def query(api, body, **kwargs):
    return post(api, QUERY, body, **kwargs)


def priorities(response) -> list[int]:
    assert response.status_code == 200, response.content
    return [entry["priority"] for entry in response.json()["entries"]]


@pytest.fixture
def rules():
    """Four rules created one by one (so creation order is priority order)."""
    specs = [("Consumer1", "Provider1|serviceDef1|1.0.0", 1, "Sysop"),
             ("Consumer1", "Provider2|serviceDef1|1.0.0", 2, "Sysop"),
             ("Consumer1", "Provider1|serviceDef2|1.0.0", 3, "Sysop"),
             ("Consumer2", "Provider1|serviceDef1|1.0.0", 4, "Manager")]
    return [make_rules(spec[:3], requester=spec[3])[0] for spec in specs]


class RuleQueryApiTests:
    def test_it_lists_every_rule_for_an_empty_query_in_creation_order(self, api, rules):
        for body in ({}, None):
            response = query(api, body)
            assert priorities(response) == [1, 2, 3, 4]
            assert response.json()["count"] == 4

    def test_it_answers_entries_in_the_interface_shape(self, api, rules):
        first = query(api, {"ids": [str(rules[0].id)]}).json()
        assert first["count"] == 1
        assert first["entries"][0] == {
            "id": str(rules[0].id), "consumer": "Consumer1", "serviceDefinition": "serviceDef1",
            "serviceInstanceId": "Provider1|serviceDef1|1.0.0", "priority": 1,
            "createdBy": "Sysop", "updatedBy": "Sysop",
            "createdAt": first["entries"][0]["createdAt"],
            "updatedAt": first["entries"][0]["createdAt"],
        }

    def test_it_filters_by_normalized_consumer_names(self, api, rules):
        assert priorities(query(api, {"consumerNames": ["consumer1"]})) == [1, 2, 3]
        assert priorities(query(api, {"consumerNames": ["consumer2", "Nobody"]})) == [4]

    def test_it_filters_by_ids_in_any_case(self, api, rules):
        ids = [str(rules[1].id).upper(), f" {rules[3].id} "]
        assert priorities(query(api, {"ids": ids})) == [2, 4]

    def test_it_filters_by_service_definition_and_instance_id(self, api, rules):
        assert priorities(query(api, {"serviceDefinitions": ["service-def-2"]})) == [3]
        assert priorities(query(api, {"serviceInstanceIds": ["provider1|service_def1|1"]})) == [1, 4]

    def test_it_filters_by_priority_range_and_creator(self, api, rules):
        assert priorities(query(api, {"minPriority": 2, "maxPriority": 3})) == [2, 3]
        assert priorities(query(api, {"minPriority": 3})) == [3, 4]
        assert priorities(query(api, {"createdBy": "manager"})) == [4]
        assert priorities(query(api, {"createdBy": "sysop"})) == [1, 2, 3]

    def test_it_ands_the_filters(self, api, rules):
        body = {"consumerNames": ["Consumer1"], "serviceDefinitions": ["serviceDef1"],
                "maxPriority": 1}
        assert priorities(query(api, body)) == [1]

    def test_it_pages_and_counts_every_match(self, api, rules):
        # reference-simple §13.6 Q17 (plus one rule of another consumer)
        body = {"consumerNames": ["consumer1"], "minPriority": 2,
                "pagination": {"page": 0, "size": 1, "direction": "asc", "sortField": "priority"}}
        response = query(api, body)
        assert priorities(response) == [2]
        assert response.json()["count"] == 2
        body["pagination"]["page"] = 1
        assert priorities(query(api, body)) == [3]
        body["pagination"]["page"] = 2
        assert query(api, body).json() == {"entries": [], "count": 2}

    @pytest.mark.parametrize("sort_field", ["priority", "consumer", "serviceDefinition",
                                            "serviceInstanceId", "createdAt", "updatedAt", "id"])
    def test_it_sorts_by_every_allowed_field_in_both_directions(self, api, rules, sort_field):
        key = {"priority": "priority", "consumer": "consumer",
               "serviceDefinition": "service_definition",
               "serviceInstanceId": "service_instance_id", "createdAt": "created_at",
               "updatedAt": "updated_at", "id": "id"}[sort_field]
        expected = [r.priority for r in Rule.objects.order_by(key, "id")]
        asc = {"pagination": {"sortField": sort_field}}
        assert priorities(query(api, asc)) == expected
        desc = {"pagination": {"sortField": sort_field, "direction": "DESC"}}
        assert priorities(query(api, desc)) == [r.priority for r in
                                                Rule.objects.order_by(f"-{key}", "-id")]

    def test_it_breaks_creation_time_ties_by_id(self, api):
        created = make_rules(*[("C", f"P{n}|svc|1.0.0", n) for n in range(1, 6)])
        assert len({rule.created_at for rule in created}) == 1
        expected = sorted(str(rule.id) for rule in created)
        assert [e["id"] for e in query(api, {}).json()["entries"]] == expected

    @pytest.mark.parametrize("body, message", [
        ({"ids": ["6-7"]}, "Invalid UUID: 6-7"),
        ({"ids": [U1, ""]}, "Id list contains null or empty element"),
        ({"consumerNames": ["Consumer1", ""]}, "Consumer name list contains null or empty element"),
        ({"serviceDefinitions": ["serviceDef1", None]},
         "Service definition name list contains null or empty element"),
        ({"serviceInstanceIds": ["instanceId1", " "]},
         "Service instance id list contains null or empty element"),
        ({"minPriority": 0}, "Invalid minimum priority: should be a positive integer"),
        ({"maxPriority": -1}, "Invalid maximum priority: should be a positive integer"),
        ({"minPriority": 10, "maxPriority": 5},
         "Minimum priority should not be greater than maximum priority"),
        ({"consumerNames": ["inv@lid-consumer"]},
         "The specified system name does not match the naming convention: Inv@lidConsumer"),
        ({"serviceDefinitions": ["2nd"]},
         "The specified service definition name does not match the naming convention: 2nd"),
        ({"serviceInstanceIds": ["instanceId1"]},
         "The specified service instance identifier does not match the naming convention: "
         "instanceId1"),
        ({"createdBy": "inv@lid"},
         "The specified system name does not match the naming convention: Inv@lid"),
        ({"pagination": {"size": 10}},
         "If size parameter is defined then page parameter cannot be undefined"),
        ({"pagination": {"page": 0}},
         "If page parameter is defined then size parameter cannot be undefined"),
        ({"pagination": {"page": 0, "size": 1001}}, "The page size cannot be larger than 1000"),
        ({"pagination": {"page": 10**19, "size": 1}}, "The page number is too large"),
        ({"pagination": {"page": 0, "size": 10, "direction": "UP"}},
         "Direction is invalid. Only ASC or DESC are allowed"),
        ({"pagination": {"page": 0, "size": 10, "sortField": "foo"}},
         "Sort field is invalid. Only the following are allowed: [id, consumer, "
         "serviceDefinition, serviceInstanceId, priority, createdAt, updatedAt]"),
        ({"minPriority": "2"}, "minPriority: A valid integer is required."),
        ({"maxPriority": True}, "maxPriority: A valid integer is required."),
        ({"consumerNames": "Consumer1"}, 'consumerNames: Expected a list of items but got type "str".'),
        ({"ids": [5]}, "ids[0]: Not a valid string."),
        ({"createdBy": ["Sysop"]}, "createdBy: Not a valid string."),
        ({"pagination": {"page": "0", "size": 10}}, "pagination.page: A valid integer is required."),
        ([], "Invalid data. Expected a dictionary, but got list."),
    ])
    def test_it_refuses_invalid_queries(self, api, body, message, settings):
        settings.MAX_PAGE_SIZE = 1000
        assert_error(query(api, body), 400, "INVALID_PARAMETER", message, ORIGIN)

    def test_it_needs_the_view_permission(self, api):
        response = query(api, {}, headers=as_system("Manager"))
        assert_forbidden(response, ORIGIN)
        grant("Manager", "view_rule")
        assert query(api, {}, headers=as_system("Manager")).status_code == 200

    def test_it_reads_in_a_bounded_number_of_queries(self, api, rules,
                                                     django_assert_max_num_queries):
        make_rules(*[("Bulk", f"P{n}|svc|1.0.0", n) for n in range(1, 201)])
        with django_assert_max_num_queries(2):
            response = query(api, {"pagination": {"page": 0, "size": 150}})
        assert len(response.json()["entries"]) == 150
