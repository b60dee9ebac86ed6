
import pytest

from store.models import Rule
from tests.factories import grant, make_rules
from tests.helpers import as_system, assert_forbidden, assert_refused, assert_unauthenticated
from tests.store.helpers import CREATE, entry, post, stored_rules

pytestmark = pytest.mark.django_db

ORIGIN = f"POST {CREATE}"


def create(api, entries, field="entries", **kwargs):
    return post(api, CREATE, {field: entries}, **kwargs)


class RuleCreateApiTests:
    def test_it_creates_rules_and_answers_201_with_them(self, api):
        response = create(api, [entry("Consumer1", "Provider1|serviceDef1|1.0.0", 1),
                                entry("Consumer1", "Provider2|serviceDef1|1.0.0", 2)])
        assert response.status_code == 201
        body = response.json()
        assert body["count"] == 2
        first = body["entries"][0]
        assert set(first) == {"id", "consumer", "serviceDefinition", "serviceInstanceId",
                              "priority", "createdBy", "updatedBy", "createdAt", "updatedAt"}
        assert first["consumer"] == "Consumer1"
        assert first["serviceDefinition"] == "serviceDef1"
        assert first["serviceInstanceId"] == "Provider1|serviceDef1|1.0.0"
        assert first["priority"] == 1
        assert first["createdBy"] == first["updatedBy"] == "Sysop"
        assert first["createdAt"] == first["updatedAt"]
        assert first["createdAt"].endswith("Z")
        assert Rule.objects.count() == 2
        stored = Rule.objects.get(id=first["id"])
        assert stored.created_at.isoformat().replace("+00:00", "Z") == first["createdAt"]

    def test_it_normalizes_consumer_and_instance_id(self, api):
        response = create(api, [entry("temperature-consumer", "temperature-provider|temperature_info|2", 1),
                                entry("Consumer2", " Provider1 | service1 | 1.0 ", 1)])
        first, second = response.json()["entries"]
        assert (first["consumer"], first["serviceInstanceId"], first["serviceDefinition"]) == (
            "TemperatureConsumer", "TemperatureProvider|temperatureInfo|2.0.0", "temperatureInfo")
        assert second["serviceInstanceId"] == "Provider1|service1|1.0.0"

    def test_it_accepts_candidates_as_an_alias_of_entries(self, api):
        response = create(api, [entry("Consumer1", "P|svc|1.0.0", 3)], field="candidates")
        assert response.status_code == 201
        assert response.json()["entries"][0]["priority"] == 3

    def test_it_refuses_entries_and_candidates_together(self, api):
        body = {"entries": [entry("C", "P|svc|1.0.0", 1)],
                "candidates": [entry("C", "P|svc|1.0.0", 2)]}
        assert_refused(lambda: post(api, CREATE, body),
                       "Give either entries or candidates, not both", ORIGIN,
                       state=stored_rules)

    def test_it_records_the_requester_as_creator(self, api, settings):
        settings.MANAGEMENT_WHITELIST = ["PlantManager"]
        response = create(api, [entry("C", "P|svc|1.0.0", 1)], headers=as_system("plant-manager"))
        assert response.json()["entries"][0]["createdBy"] == "PlantManager"

    def test_it_allows_the_same_instance_twice_with_different_priorities(self, api):
        response = create(api, [entry("C", "P|svc|1.0.0", 1), entry("C", "P|svc|1.0.0", 2)])
        assert response.status_code == 201

    @pytest.mark.parametrize("body", [{"entries": []}, {}, {"entries": None}, None])
    def test_it_refuses_an_empty_request(self, api, body):
        assert_refused(lambda: post(api, CREATE, body), "Request payload is empty", ORIGIN,
                       state=stored_rules)

    def test_it_refuses_a_null_element(self, api):
        assert_refused(lambda: create(api, [entry("Late", "P|svc|1.0.0", 1), None]),
                       "Request payload contains null element", ORIGIN, state=stored_rules)

    @pytest.mark.parametrize("item", [{"consumer": "Late", "serviceInstanceId": "P|svc|1.0.0"},
                                      entry("Late", "P|svc|1.0.0", None)])
    def test_it_refuses_a_missing_priority(self, api, item):
        assert_refused(lambda: create(api, [item]), "Priority is missing", ORIGIN,
                       state=stored_rules)

    @pytest.mark.parametrize("priority", [0, -5])
    def test_it_refuses_a_non_positive_priority(self, api, priority):
        assert_refused(lambda: create(api, [entry("Late", "P|svc|1.0.0", priority)]),
                       "Priority should be positive", ORIGIN, state=stored_rules)

    def test_it_refuses_a_priority_the_database_cannot_hold(self, api):
        assert_refused(lambda: create(api, [entry("Late", "P|svc|1.0.0", 2**31)]),
                       "Priority should not be greater than 2147483647", ORIGIN,
                       state=stored_rules)

    @pytest.mark.parametrize("priority, field", [("2", "priority"), (True, "priority"),
                                                 (1.5, "priority"), (1.0, "priority")])
    def test_it_refuses_a_priority_of_the_wrong_json_type(self, api, priority, field):
        assert_refused(lambda: create(api, [entry("Late", "P|svc|1.0.0", 1),
                                    entry("Late", "P|svc|1.0.0", priority)]),
                       f"entries[1].{field}: A valid integer is required.", ORIGIN,
                       state=stored_rules)

    def test_it_refuses_other_wrong_json_types_naming_the_field(self, api):
        assert_refused(lambda: create(api, [entry(5, "P|svc|1.0.0", 1)]),
                       "entries[0].consumer: Not a valid string.", ORIGIN, state=stored_rules)
        assert_refused(lambda: create(api, [entry("Late", ["P|svc|1.0.0"], 1)]),
                       "entries[0].serviceInstanceId: Not a valid string.", ORIGIN,
                       state=stored_rules)
        assert_refused(lambda: create(api, {"consumer": "Late"}),
                       'entries: Expected a list of items but got type "dict".', ORIGIN,
                       state=stored_rules)
        assert_refused(lambda: create(api, ["text"]),
                       "entries[0]: Invalid data. Expected a dictionary, but got str.", ORIGIN,
                       state=stored_rules)
        assert_refused(lambda: post(api, CREATE, [entry("Late", "P|svc|1.0.0", 1)]),
                       "Invalid data. Expected a dictionary, but got list.", ORIGIN,
                       state=stored_rules)

    @pytest.mark.parametrize("consumer, message", [
        ("Inv@lid", "The specified system name does not match the naming convention: Inv@lid"),
        (None, "The specified system name does not match the naming convention: null"),
        ("", "The specified system name does not match the naming convention: null"),
    ])
    def test_it_refuses_an_invalid_consumer(self, api, consumer, message):
        assert_refused(lambda: create(api, [entry(consumer, "P|svc|1.0.0", 1)]), message, ORIGIN,
                       state=stored_rules)

    @pytest.mark.parametrize("instance_id, message", [
        ("inv@lidInstanceId", "The specified service instance identifier does not match the "
                              "naming convention: inv@lidInstanceId"),
        ("Provider1|service1", "The specified service instance identifier does not match the "
                               "naming convention: Provider1|service1"),
        ("A||1.0.0", "The specified service instance identifier does not match the naming "
                     "convention: A||1.0.0"),
        (None, "The specified service instance identifier does not match the naming "
               "convention: null"),
        ("Provider1|service1|1.0.0.0",
         "Version verification failure: version must contain exactly 2 separator . characters"),
        ("Provider1|service1|1.23.SOMETHING", "Version verification failure: the version should "
                                              "only contain numbers and separator . characters"),
        ("inv@lid|service1|1.0.0",
         "The specified system name does not match the naming convention: Inv@lid"),
    ])
    def test_it_refuses_an_invalid_instance_id(self, api, instance_id, message):
        assert_refused(lambda: create(api, [entry("Late", instance_id, 1)]), message, ORIGIN,
                       state=stored_rules)

    def test_it_refuses_duplicates_inside_the_request(self, api):
        entries = [entry("Consumer1", "Provider1|service1|1.0.0", 1),
                   entry("consumer1", "Provider1|service1|2.0.0", 1)]
        assert_refused(lambda: create(api, entries),
                       "Conflicting rules, the combination of the following fields should be "
                       "unique: Consumer1, service definition: service1, priority: 1", ORIGIN,
                       state=stored_rules)
        assert not Rule.objects.exists()

    def test_it_refuses_a_rule_that_is_already_stored_and_stores_nothing(self, api):
        make_rules(("Consumer1", "Provider1|serviceDef1|1.0.0", 1))
        entries = [entry("Late", "Provider1|serviceDef1|1.0.0", 1),
                   entry("Consumer1", "Other|serviceDef1|1.0.0", 1)]
        assert_refused(lambda: create(api, entries),
                       "There is already an existing entity with consumer name: Consumer1, "
                       "service definition: serviceDef1, priority: 1", ORIGIN, state=stored_rules)
        assert Rule.objects.count() == 1

    def test_it_limits_the_number_of_entries(self, api, settings):
        settings.MAX_BULK_SIZE = 2
        entries = [entry("Late", "P|svc|1.0.0", priority) for priority in (1, 2, 3)]
        assert_refused(lambda: create(api, entries),
                       "Too many entries: at most 2 may be created in one request", ORIGIN,
                       state=stored_rules)
        assert create(api, entries[:2]).status_code == 201

    def test_it_needs_the_add_permission(self, api):
        body = [entry("Late", "P|svc|1.0.0", 1)]
        response = create(api, body, headers=as_system("Manager"))
        assert_forbidden(response, ORIGIN)
        grant("Manager", "view_rule")
        assert create(api, body, headers=as_system("Manager")).status_code == 403
        grant("Manager", "add_rule")
        assert create(api, body, headers=as_system("Manager")).status_code == 201

    def test_it_needs_an_identity(self, api):
        response = api.post(CREATE, {"entries": []}, format="json")
        assert_unauthenticated(response, ORIGIN, "No authorization header has been provided")

    def test_it_answers_malformed_json_with_the_envelope(self, api):
        response = api.post(CREATE, "{", content_type="application/json",
                            HTTP_AUTHORIZATION="Bearer SYSTEM//Sysop")
        assert response.status_code == 400
        assert response.json()["origin"] == ORIGIN
