"""Flexible store management (issue 33): bulk create, query, bulk remove; every refusal a 400
with nothing written; served only under ORCHESTRATION_STRATEGY=flexible-store."""
import uuid

import pytest

from store.models import MAX_PRIORITY, FlexibleRule
from tests.helpers import SYSOP, as_system, assert_error

pytestmark = pytest.mark.django_db

BASE = "/serviceorchestration/orchestration/mgmt/flexible-store"
QUERY, CREATE, REMOVE = f"{BASE}/query", f"{BASE}/create", f"{BASE}/remove"


@pytest.fixture(autouse=True)
def flexible(settings) -> None:
    settings.ORCHESTRATION_STRATEGY = "flexible-store"


def rule(**fields) -> dict:
    return {"consumer": "CarConsumer1", "provider": "ProviderOne",
            "serviceDefinition": "serviceOne", **fields}


def create(api, *rules, headers=SYSOP):
    return api.post(CREATE, {"entries": list(rules)}, format="json", **headers)


def stored() -> list[tuple]:
    return list(FlexibleRule.objects.order_by("created_at", "id").values_list(
        "consumer", "provider", "service_definition", "priority"))


class FlexibleCreateTests:
    def test_it_creates_rules_with_every_field_normalized(self, api):
        response = create(api, rule(
            consumer="car-consumer-1", consumerMetadataRequirements=[{"site": "plant1"}],
            provider=None, providerMetadataRequirements=[{"vendor": {"op": "IN",
                                                                     "value": ["a", "b"]}}],
            serviceDefinition="service_one", interfaceTemplateName="GENERIC_HTTP",
            serviceMetadataRequirements=[{"unit": "celsius"}], minVersion="1",
            maxVersion="2.1", priority=3))
        assert response.status_code == 201, response.content
        entry = response.json()["entries"][0]
        assert {key: value for key, value in entry.items()
                if key not in ("id", "createdAt")} == {
            "consumer": "CarConsumer1", "consumerMetadataRequirements": [{"site": "plant1"}],
            "provider": None,
            "providerMetadataRequirements": [{"vendor": {"op": "IN", "value": ["a", "b"]}}],
            "serviceDefinition": "serviceOne", "interfaceTemplateName": "generic_http",
            "serviceMetadataRequirements": [{"unit": "celsius"}], "minVersion": "1.0.0",
            "maxVersion": "2.1.0", "priority": 3, "createdBy": "Sysop"}
        assert response.json()["count"] == 1

    def test_a_rule_without_priority_is_the_least_preferred(self, api):
        response = create(api, rule())
        assert response.json()["entries"][0]["priority"] == MAX_PRIORITY

    @pytest.mark.parametrize("fields, message", [
        ({"serviceDefinition": None}, "Service definition is missing"),
        ({"serviceDefinition": " "}, "Service definition is missing"),
        ({"consumer": None}, "Consumer name or consumer metadata requirements are missing"),
        ({"consumer": None, "consumerMetadataRequirements": []},
         "Consumer name or consumer metadata requirements are missing"),
        ({"provider": " "}, "Provider name or provider metadata requirements are missing"),
        ({"consumer": "1bad"}, "The specified system name does not match the naming "
                               "convention: 1bad"),
        ({"providerMetadataRequirements": [{"a": {"op": "NOPE", "value": 1}}]},
         "Invalid metadata operation requirement: NOPE"),
        ({"minVersion": "2.0.0", "maxVersion": "1.9.9"},
         "Minimum version should not be greater than maximum version"),
        ({"maxVersion": "1.x"}, "Version verification failure: the version should only "
                                "contain numbers and separator . characters"),
        ({"priority": 0}, "Priority should be positive"),
    ])
    def test_it_refuses_an_invalid_rule_and_writes_nothing(self, api, fields, message):
        response = create(api, rule(consumer="Kept"), rule(**fields))
        assert_error(response, 400, "INVALID_PARAMETER", message, f"POST {CREATE}")
        assert stored() == []

    def test_it_refuses_the_same_rule_twice(self, api):
        assert_error(create(api, rule(), rule()), 400, "INVALID_PARAMETER",
                     "Duplicate rule in the request: consumer: CarConsumer1, provider: "
                     f"ProviderOne, service definition: serviceOne, priority: {MAX_PRIORITY}",
                     f"POST {CREATE}")
        assert create(api, rule()).status_code == 201
        assert_error(create(api, rule(priority=2), rule()), 400, "INVALID_PARAMETER",
                     "The same rule exists already: consumer: CarConsumer1, provider: "
                     f"ProviderOne, service definition: serviceOne, priority: {MAX_PRIORITY}",
                     f"POST {CREATE}")
        assert len(stored()) == 1

    @pytest.mark.parametrize("body, message", [
        ({}, "Request payload is empty"),
        ({"entries": []}, "Request payload is empty"),
        ({"entries": [None]}, "Request payload contains null element"),
        ({"entries": [{"consumer": 5}]}, "entries[0].consumer: Not a valid string."),
        ({"entries": [{"consumerMetadataRequirements": {"a": 1}}]},
         'entries[0].consumerMetadataRequirements: Expected a list of items but got type '
         '"dict".'),
    ])
    def test_it_refuses_malformed_bodies(self, api, body, message):
        response = api.post(CREATE, body, format="json", **SYSOP)
        assert_error(response, 400, "INVALID_PARAMETER", message, f"POST {CREATE}")

    def test_only_management_systems_create(self, api):
        response = create(api, rule(), headers=as_system("CarConsumer1"))
        assert response.status_code == 403
        assert stored() == []


class FlexibleQueryAndRemoveTests:
    def test_it_filters_and_pages(self, api):
        create(api, rule(priority=1), rule(consumer="CarConsumer2", priority=2),
               rule(consumer=None, consumerMetadataRequirements=[{"site": "a"}],
                    provider="ProviderTwo", priority=3))
        everything = api.post(QUERY, {}, format="json", **SYSOP).json()
        assert sorted(e["priority"] for e in everything["entries"]) == [1, 2, 3]
        by_provider = api.post(QUERY, {"providerNames": ["ProviderTwo"]}, format="json",
                               **SYSOP).json()
        assert [e["priority"] for e in by_provider["entries"]] == [3]
        page = api.post(QUERY, {"pagination": {"page": 0, "size": 1, "direction": "DESC",
                                               "sortField": "priority"},
                                "consumerNames": ["CarConsumer1", "CarConsumer2"]},
                        format="json", **SYSOP).json()
        assert (page["count"], [e["priority"] for e in page["entries"]]) == (2, [2])

    def test_it_removes_by_ids_and_ignores_unknown_ones(self, api):
        created = create(api, rule(priority=1), rule(priority=2)).json()["entries"]
        response = api.delete(f"{REMOVE}?ids={created[0]['id']},{uuid.uuid4()}", **SYSOP)
        assert response.status_code == 200
        assert [r[3] for r in stored()] == [2]

    @pytest.mark.parametrize("query, message", [("", "Rule ids are missing"),
                                                ("?ids=x", "Invalid UUID: x")])
    def test_it_refuses_a_remove_without_valid_ids(self, api, query, message):
        create(api, rule())
        assert api.delete(f"{REMOVE}{query}", **SYSOP).status_code == 400
        assert len(stored()) == 1


class StrategyTests:
    def test_under_the_simple_store_it_is_an_unknown_path(self, api, settings):
        settings.ORCHESTRATION_STRATEGY = "simple-store"
        assert_error(create(api, rule()), 404, "DATA_NOT_FOUND",
                     f"No such endpoint: POST {CREATE}", f"POST {CREATE}")

    def test_under_the_flexible_store_the_simple_store_is_an_unknown_path(self, api):
        path = "/serviceorchestration/orchestration/mgmt/simple-store/query"
        assert_error(api.post(path, {}, format="json", **SYSOP), 404, "DATA_NOT_FOUND",
                     f"No such endpoint: POST {path}", f"POST {path}")
