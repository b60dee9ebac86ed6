import pytest

from notifications.models import NotificationDelivery
from subscriptions.models import Subscription
from tests.subscriptions.helpers import subscribe, subscription_body

pytestmark = pytest.mark.django_db


class SubscriptionAdminTests:
    def test_it_lists_subscriptions_and_pushes_on_demand(self, admin_client, api):
        subscribe(api, subscription_body())
        subscription = Subscription.objects.get()
        page = admin_client.get("/admin/subscriptions/subscription/")
        assert page.status_code == 200
        assert list(page.context["cl"].result_list) == [subscription]
        response = admin_client.post("/admin/subscriptions/subscription/",
                                     {"action": "push_now",
                                      "_selected_action": [str(subscription.pk)]})
        assert response.status_code == 302
        assert NotificationDelivery.objects.get().subscription_id == subscription.pk
        assert admin_client.get("/admin/subscriptions/subscription/add/").status_code == 403
