"""Push management's unsubscribe (reference-simple §6.10, black-box PU1–PU4), also at
`DELETE .../unsubscribe/{id}`, the path the reference registers."""
import uuid

import pytest

from notifications.models import NotificationDelivery
from subscriptions.models import Subscription
from tests.endpoints import make_delivery
from tests.factories import make_push_subscription, make_subscription
from tests.helpers import SYSOP, as_system, assert_error, assert_forbidden
from tests.subscriptions.helpers import PUSH_UNSUBSCRIBE

pytestmark = pytest.mark.django_db

ORIGIN = f"DELETE {PUSH_UNSUBSCRIBE}"
MANAGER = as_system("PlantManager")


@pytest.fixture
def manager(settings) -> None:
    """PlantManager may manage (whitelisted) but is no operator."""
    settings.MANAGEMENT_WHITELIST = ["PlantManager"]


def remove(api, *ids: str, headers=SYSOP):
    query = "&".join(f"ids={value}" for value in ids)
    return api.delete(f"{PUSH_UNSUBSCRIBE}?{query}", **headers)


def remaining() -> set[str]:
    return {str(pk) for pk in Subscription.objects.values_list("id", flat=True)}


class PushUnsubscribeApiTests:
    def test_it_removes_own_subscriptions_and_ignores_unknown_ids(self, api, manager):  # PU2
        first = make_push_subscription(api, "ConsumerA", owner="PlantManager")
        second = make_push_subscription(api, "ConsumerB", owner="PlantManager")
        kept = make_push_subscription(api, "ConsumerC", owner="PlantManager")
        response = remove(api, first, f"{second.upper()} ", str(uuid.uuid4()), headers=MANAGER)
        assert response.status_code == 200 and response.content == b""
        assert remaining() == {kept}

    def test_it_takes_comma_separated_ids(self, api):
        first, second = (make_push_subscription(api, "ConsumerA"),
                         make_push_subscription(api, "ConsumerB"))
        assert remove(api, f"{first},{second}").status_code == 200
        assert remaining() == set()

    def test_it_refuses_to_remove_another_owners_subscription(self, api, manager):  # PU1
        own = make_push_subscription(api, "ConsumerA", owner="PlantManager")
        others = make_push_subscription(api, "ConsumerB")
        assert_error(remove(api, own, others, headers=MANAGER), 403, "FORBIDDEN",
                     f"{others} is not owned by the requester", ORIGIN)
        assert remaining() == {own, others}  # nothing removed

    def test_it_lets_the_operator_remove_any(self, api, manager):
        managed = make_push_subscription(api, "ConsumerA", owner="PlantManager")
        consumers_own = make_subscription(api, consumer="ConsumerB")
        assert remove(api, managed, consumers_own).status_code == 200
        assert remaining() == set()

    def test_it_cancels_pending_deliveries_of_removed_subscriptions(self, api):
        removed = make_push_subscription(api, "ConsumerA")
        delivery = make_delivery(subscription_id=uuid.UUID(removed))
        assert remove(api, removed).status_code == 200
        delivery.refresh_from_db()
        assert (delivery.status, delivery.last_error) == (
            NotificationDelivery.Status.CANCELLED, "Unsubscribed")

    def test_it_serves_the_path_the_java_common_library_makes(self, api):
        """ArrowheadHttpService appends the id to the registered `/unsubscribe/{id}`."""
        removed, kept = (make_push_subscription(api, "ConsumerA"),
                         make_push_subscription(api, "ConsumerB"))
        response = api.delete(f"{PUSH_UNSUBSCRIBE}/%7Bid%7D/{removed}", **SYSOP)
        assert response.status_code == 200
        assert remaining() == {kept}

    @pytest.mark.parametrize("query", ["", "?ids=", "?ids=%20,%20", "?other=1"])
    def test_it_refuses_no_ids(self, api, query):  # PU3
        assert_error(api.delete(f"{PUSH_UNSUBSCRIBE}{query}", **SYSOP), 400,
                     "INVALID_PARAMETER", "Request payload is missing", ORIGIN)

    def test_it_refuses_an_invalid_id(self, api):  # PU4
        kept = make_push_subscription(api, "ConsumerA")
        assert_error(remove(api, kept, "6-7"), 400, "INVALID_PARAMETER", "Invalid UUID id",
                     ORIGIN)
        assert remaining() == {kept}

    def test_it_needs_management_permission(self, api, settings):
        settings.MANAGEMENT_POLICY = "sysop-only"
        assert_forbidden(remove(api, str(uuid.uuid4()), headers=as_system("ConsumerA")), ORIGIN)


class PushUnsubscribeOneApiTests:
    def test_it_removes_one_subscription_at_the_registered_path(self, api):
        removed, kept = (make_push_subscription(api, "ConsumerA"),
                         make_push_subscription(api, "ConsumerB"))
        assert api.delete(f"{PUSH_UNSUBSCRIBE}/{removed}", **SYSOP).status_code == 200
        assert remaining() == {kept}
        assert api.delete(f"{PUSH_UNSUBSCRIBE}/{removed}", **SYSOP).status_code == 200

    def test_it_has_the_same_ownership_rule(self, api, manager):
        others = make_push_subscription(api, "ConsumerA")
        path = f"{PUSH_UNSUBSCRIBE}/{others}"
        assert_error(api.delete(path, **MANAGER), 403, "FORBIDDEN",
                     f"{others} is not owned by the requester", f"DELETE {path}")

    @pytest.mark.parametrize("value, message", [("%20", "UUID is missing"),
                                                ("6-7", "Invalid UUID id")])
    def test_it_validates_the_id(self, api, value, message):
        path = f"{PUSH_UNSUBSCRIBE}/{value}"
        response = api.delete(path, **SYSOP)
        assert response.status_code == 400
        assert response.json()["errorMessage"] == message
