import pytest
from django.contrib.messages import get_messages
from django.core.cache import cache

from notifications.models import NotificationDelivery
from subscriptions.models import Subscription
from tests.fake_blacklist import blacklist  # noqa: F401  (fixture)
from tests.factories import make_rules
from tests.subscriptions.helpers import (
    flags_clear_all,
    flags_set_all,
    mqtt_notify,
    push_element,
    push_subscribe,
    subscribe,
    subscription_body,
)

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

    def test_it_shows_and_filters_the_subscriptions_awaiting_evaluation(self, admin_client,
                                                                        api):
        for consumer in ("Flagged", "Evaluated"):
            subscribe(api, subscription_body(), consumer=consumer)
        flags_clear_all()
        flags_set_all(Subscription.objects.filter(target="Flagged"))
        page = admin_client.get("/admin/subscriptions/subscription/", {"o": "2"})
        assert {s.target: s.flagged for s in page.context["cl"].result_list} == {
            "Flagged": True, "Evaluated": False}
        assert "Awaits evaluation" in page.content.decode()
        for value, target in (("1", "Flagged"), ("0", "Evaluated")):
            page = admin_client.get("/admin/subscriptions/subscription/",
                                    {"awaits_evaluation": value})
            assert [s.target for s in page.context["cl"].result_list] == [target]

    def test_it_shows_and_searches_owner_and_target(self, admin_client, api):
        push_subscribe(api, push_element("ConsumerOfPlant"))
        page = admin_client.get("/admin/subscriptions/subscription/", {"q": "ConsumerOfPlant"})
        assert [s.target for s in page.context["cl"].result_list] == ["ConsumerOfPlant"]
        html = page.content.decode()
        assert "Sysop" in html and "ConsumerOfPlant" in html
        assert NotificationDelivery.objects.count() == 0

    def test_it_records_the_consumer_as_receiver_of_its_deliveries(self, admin_client, api):
        push_subscribe(api, push_element("ConsumerOfPlant", notify=mqtt_notify("plant/t")))
        admin_client.post("/admin/subscriptions/subscription/",
                          {"action": "push_now",
                           "_selected_action": [str(Subscription.objects.get().pk)]})
        page = admin_client.get("/admin/notifications/notificationdelivery/")
        html = page.content.decode()
        assert NotificationDelivery.objects.get().receiver == "ConsumerOfPlant"
        assert "ConsumerOfPlant" in html and "plant/t" in html

    def test_it_reports_a_subscription_whose_push_needs_a_failing_system(
            self, admin_client, api, blacklist):  # noqa: F811
        make_rules(("TemperatureConsumer", "TemperatureProvider|temperatureInfo|1.0.0", 1))
        subscribe(api, subscription_body())
        subscription = Subscription.objects.get()
        cache.clear()  # the Blacklist's answers to the subscribe's preview of the result
        blacklist.refuse_with = 403
        response = admin_client.post("/admin/subscriptions/subscription/",
                                     {"action": "push_now",
                                      "_selected_action": [str(subscription.pk)]})
        assert response.status_code == 302
        assert [str(m) for m in get_messages(response.wsgi_request)] == [
            "0 notification(s) queued.",
            f"1 subscription(s) not pushed: {subscription.pk}: Requester has no management "
            "permission"]
        assert NotificationDelivery.objects.count() == 0
