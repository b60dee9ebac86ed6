"""The consumer's own subscription query (our extension): push management's query shapes,
restricted to the subscriptions the requester owns or is the target of."""
import pytest

from tests.factories import make_push_subscription, make_subscription
from tests.helpers import as_system, assert_error
from tests.subscriptions.helpers import SUBSCRIPTION_QUERY

pytestmark = pytest.mark.django_db

ORIGIN = f"POST {SUBSCRIPTION_QUERY}"


def query(api, consumer: str, body=None):
    return api.post(SUBSCRIPTION_QUERY, body, format="json", **as_system(consumer))


def ids_of(response) -> set[str]:
    assert response.status_code == 200, response.content
    assert response.json()["count"] == len(response.json()["entries"])
    return {entry["id"] for entry in response.json()["entries"]}


@pytest.fixture
def subscriptions(api) -> dict[str, str]:
    return {
        "own": make_subscription(api, consumer="ConsumerA"),
        "for_a": make_push_subscription(api, "ConsumerA", "pressureInfo"),
        "for_b": make_push_subscription(api, "ConsumerB"),
        "of_b": make_subscription(api, consumer="ConsumerB"),
    }


class SubscriptionQueryApiTests:
    def test_it_lists_what_the_consumer_owns_or_is_the_target_of(self, api, subscriptions):
        assert ids_of(query(api, "ConsumerA")) == {subscriptions["own"], subscriptions["for_a"]}
        assert ids_of(query(api, "ConsumerB")) == {subscriptions["for_b"], subscriptions["of_b"]}
        assert ids_of(query(api, "Stranger")) == set()

    def test_it_shows_the_operators_own_subscriptions_to_the_operator(self, api,
                                                                      subscriptions):
        assert ids_of(query(api, "Sysop")) == {subscriptions["for_a"], subscriptions["for_b"]}

    def test_it_narrows_with_the_filters(self, api, subscriptions):
        assert ids_of(query(api, "ConsumerA", {"ownerSystems": ["Sysop"]})) == {
            subscriptions["for_a"]}
        assert ids_of(query(api, "ConsumerA", {"serviceDefinitions": ["temperatureInfo"]})) == {
            subscriptions["own"]}
        # A filter cannot widen the view to other consumers' subscriptions.
        assert ids_of(query(api, "ConsumerA", {"targetSystems": ["ConsumerB"]})) == set()

    def test_it_answers_with_the_push_query_shape(self, api, subscriptions):
        page = {"page": 0, "size": 1, "sortField": "createdAt", "direction": "ASC"}
        response = query(api, "ConsumerA", {"pagination": page})
        body = response.json()
        assert body["count"] == 2 and len(body["entries"]) == 1
        entry = body["entries"][0]
        assert entry["id"] == subscriptions["own"]
        assert (entry["ownerSystemName"], entry["targetSystemName"]) == ("ConsumerA",
                                                                         "ConsumerA")

    def test_it_is_not_a_management_operation(self, api, settings, subscriptions):
        settings.MANAGEMENT_POLICY = "sysop-only"
        assert query(api, "ConsumerA").status_code == 200

    def test_it_validates_like_the_push_query(self, api):
        assert_error(query(api, "ConsumerA", {"ownerSystems": [""]}), 400, "INVALID_PARAMETER",
                     "Owner system list contains empty element", ORIGIN)
