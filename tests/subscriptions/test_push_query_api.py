"""Push management's query (reference-simple §6.11, black-box PQ1–PQ6)."""
import datetime as dt

import pytest
from django.utils import timezone

from subscriptions.models import Subscription
from tests.factories import make_push_subscription
from tests.helpers import SYSOP, as_system, assert_error, assert_forbidden
from tests.subscriptions.helpers import PUSH_QUERY

pytestmark = pytest.mark.django_db

ORIGIN = f"POST {PUSH_QUERY}"


def query(api, body=None, headers=SYSOP):
    return api.post(PUSH_QUERY, body, format="json", **headers)


@pytest.fixture
def three(api, settings) -> list[str]:
    """Sysop's ConsumerA/temperatureInfo, ConsumerB/pressureInfo, and PlantManager's
    ConsumerA/pressureInfo, created in that order a minute apart."""
    settings.MANAGEMENT_WHITELIST = ["PlantManager"]
    specs = [("Sysop", "ConsumerA", "temperatureInfo"), ("Sysop", "ConsumerB", "pressureInfo"),
             ("PlantManager", "ConsumerA", "pressureInfo")]
    ids = []
    for minutes, (owner, target, service) in enumerate(specs):
        ids.append(make_push_subscription(api, target, service, owner=owner))
        Subscription.objects.filter(id=ids[-1]).update(
            created_at=timezone.now() - dt.timedelta(minutes=10 - minutes))
    return ids


def ids_of(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [entry["id"] for entry in response.json()["entries"]]


class PushQueryApiTests:
    @pytest.mark.parametrize("body", [None, {}])
    def test_it_lists_everything_newest_first_without_a_body(self, api, three, body):  # PQ1
        response = query(api, body)
        assert ids_of(response) == three[::-1]
        assert response.json()["count"] == 3
        entry = response.json()["entries"][0]
        assert (entry["ownerSystemName"], entry["targetSystemName"]) == ("PlantManager",
                                                                         "ConsumerA")

    def test_it_filters_by_owner_target_and_service_definition(self, api, three):
        assert ids_of(query(api, {"ownerSystems": ["plant-manager"]})) == [three[2]]
        assert ids_of(query(api, {"targetSystems": ["ConsumerA"]})) == [three[2], three[0]]
        assert ids_of(query(api, {"serviceDefinitions": ["pressure-info"]})) == [three[2],
                                                                                   three[1]]
        body = {"ownerSystems": ["Sysop"], "targetSystems": ["ConsumerA", "ConsumerB"],
                "serviceDefinitions": ["pressureInfo"]}
        assert ids_of(query(api, body)) == [three[1]]

    def test_it_pages_and_counts_all_matches(self, api, three):
        page = {"page": 1, "size": 2, "direction": "asc", "sortField": "createdAt"}
        response = query(api, {"pagination": page})
        assert ids_of(response) == [three[2]]
        assert response.json()["count"] == 3

    @pytest.mark.parametrize("field, column", [("ownerSystem", "owner"),
                                               ("targetSystem", "target"),
                                               ("serviceDefinition", "service_definition"),
                                               ("id", "id")])
    def test_it_sorts_by_each_allowed_field(self, api, three, field, column):
        page = {"page": 0, "size": 10, "direction": "DESC", "sortField": field}
        expected = [str(pk) for pk in Subscription.objects.order_by(f"-{column}", "-id")
                    .values_list("id", flat=True)]
        assert ids_of(query(api, {"pagination": page})) == expected

    @pytest.mark.parametrize("body, message", [
        ({"ownerSystems": ["System1", ""]}, "Owner system list contains empty element"),  # PQ2
        ({"targetSystems": ["System1", None]},
         "Target system list contains empty element"),  # PQ3
        ({"serviceDefinitions": ["serviceDef1", ""]},
         "Service definition list contains empty element"),  # PQ4
        ({"serviceDefinitions": ["inv@lid-service"]},
         "The specified service definition name does not match the naming convention: "
         "inv@lidService"),  # PQ5
        ({"ownerSystems": ["inv@lid"]},
         "The specified system name does not match the naming convention: Inv@lid"),
        ({"pagination": {"page": 0, "size": 1, "sortField": "ownerSystemName"}},
         "Sort field is invalid. Only the following are allowed: [id, ownerSystem, "
         "targetSystem, serviceDefinition, createdAt]"),  # PQ6
        ({"pagination": {"size": 1}},
         "If size parameter is defined then page parameter cannot be undefined"),
    ])
    def test_it_refuses_invalid_filters(self, api, body, message):
        assert_error(query(api, body), 400, "INVALID_PARAMETER", message, ORIGIN)

    def test_it_needs_management_permission(self, api, settings):
        settings.MANAGEMENT_POLICY = "sysop-only"
        assert_forbidden(query(api, headers=as_system("ConsumerA")), ORIGIN)
