import datetime as dt
import uuid

import pytest
from django.utils import timezone

from notifications.models import NotificationDelivery
from orchestration.models import OrchestrationJob
from subscriptions.models import Subscription
from tests.factories import make_rules, make_subscription
from tests.helpers import as_system, assert_error, assert_unauthenticated
from tests.subscriptions.helpers import (
    HTTP_NOTIFY,
    SUBSCRIBE,
    UNSUBSCRIBE,
    mqtt_notify,
    subscribe,
    subscription_body,
)

pytestmark = pytest.mark.django_db

ORIGIN = f"POST {SUBSCRIBE}"


def http(**properties) -> dict:
    return {"protocol": "HTTP", "properties": properties}


VALID_HTTP = {"address": "127.0.0.1", "port": "8080", "method": "POST", "path": "/notify"}


def without(key: str) -> dict:
    return {k: v for k, v in VALID_HTTP.items() if k != key}


class SubscribeApiTests:
    def test_it_creates_a_subscription_and_answers_201_with_its_id(self, api):
        response = subscribe(api, subscription_body(duration=60))
        assert response.status_code == 201
        assert response["Content-Type"].startswith("text/plain")
        subscription = Subscription.objects.get()
        assert response.content.decode() == str(subscription.id)
        assert (subscription.owner, subscription.target, subscription.service_definition) == (
            "TemperatureConsumer", "TemperatureConsumer", "temperatureInfo")
        assert subscription.notify_protocol == "HTTP"
        assert subscription.notify_properties == {"address": "127.0.0.1", "port": 8080,
                                                  "method": "POST", "path": "/notify"}
        remaining = subscription.expires_at - timezone.now()
        assert dt.timedelta(seconds=55) < remaining <= dt.timedelta(seconds=60)
        assert not NotificationDelivery.objects.exists()

    def test_it_overwrites_the_same_subscription_in_place_and_answers_200(self, api):
        first = subscribe(api, subscription_body()).content.decode()
        response = subscribe(api, subscription_body(notify=mqtt_notify(), duration=30))
        assert response.status_code == 200
        assert response.content.decode() == first
        subscription = Subscription.objects.get()
        assert (subscription.notify_protocol, subscription.duration) == ("MQTT", 30)

    def test_it_tells_subscriptions_apart_by_owner_and_service_definition(self, api):
        ids = {subscribe(api, subscription_body()).content,
               subscribe(api, subscription_body("pressureInfo")).content,
               subscribe(api, subscription_body(None)).content,
               subscribe(api, subscription_body(), consumer="OtherConsumer").content}
        assert len(ids) == 4
        assert subscribe(api, subscription_body(None)).status_code == 200

    def test_it_normalizes_protocol_and_property_keys(self, api):
        notify = {"protocol": "  https  ", "properties": {"  Address  ": "127.0.0.1",
                                                         "PORT": 8443, "Method": "put",
                                                         "path": " /n "}}
        subscribe(api, subscription_body(notify=notify))
        subscription = Subscription.objects.get()
        assert subscription.notify_protocol == "HTTPS"
        assert subscription.notify_properties == {"address": "127.0.0.1", "port": 8443,
                                                  "method": "PUT", "path": "/n"}

    def test_it_accepts_the_requester_as_target(self, api):
        body = subscription_body(targetSystemName="temperature-consumer")
        assert subscribe(api, body).status_code == 201

    def test_it_pushes_at_once_with_trigger(self, api, django_capture_on_commit_callbacks):
        make_rules(("TemperatureConsumer", "P|temperatureInfo|1.0.0", 1))
        with django_capture_on_commit_callbacks() as callbacks:
            response = subscribe(api, subscription_body(notify=mqtt_notify("t/1")),
                                 query="?trigger=TRUE")
        assert response.status_code == 201
        delivery = NotificationDelivery.objects.get()
        assert delivery.protocol == "MQTT" and delivery.properties == {"topic": "t/1"}
        assert delivery.payload["receiver"] == "TemperatureConsumer"
        assert delivery.payload["sender"] == "SimpleStoreServiceOrchestration"
        assert [r["serviceInstanceId"] for r in delivery.payload["payload"]["results"]] == [
            "P|temperatureInfo|1.0.0"]
        assert delivery.payload["payload"]["warnings"] == []
        job = OrchestrationJob.objects.get()
        assert (job.type, job.subscription_id, job.result_count) == (
            "PUSH", uuid.UUID(response.content.decode()), 1)
        assert len(callbacks) == 1  # the send is enqueued once the subscription is committed

    def test_it_sends_the_bare_response_over_http(self, api):
        subscribe(api, subscription_body(), query="?trigger=true")
        assert NotificationDelivery.objects.get().payload == {"results": [], "warnings": []}

    def test_it_does_not_push_without_trigger(self, api):
        subscribe(api, subscription_body(), query="?trigger=false")
        assert not NotificationDelivery.objects.exists()

    @pytest.mark.parametrize("body, message", [
        (subscription_body(notify={"protocol": "", "properties": VALID_HTTP}),
         "Notify protocol is missing"),
        (subscription_body(notify={"properties": VALID_HTTP}), "Notify protocol is missing"),
        ({"orchestrationRequest": {}}, "Notify protocol is missing"),
        (subscription_body(notify={"protocol": "HTTP", "properties": None}),
         "Notify properties are missing"),
        (subscription_body(notify=mqtt_notify() | {"properties": {}}),
         "Notify properties are missing"),
        (subscription_body(notify=http(**VALID_HTTP, **{" ": "value"})),
         "Notify properties contains empty key"),
        (subscription_body(notify=http(**VALID_HTTP, key="")),
         "Notify properties contains empty value"),
        (subscription_body(duration=-1), "Subscription duration must be greater than 0"),
        (subscription_body(duration=0), "Subscription duration must be greater than 0"),
        (subscription_body(targetSystemName="TemperatureProvider"),
         "Target system cannot be different than the requester system"),
        (subscription_body(notify={"protocol": "magic_http", "properties": VALID_HTTP}),
         "Unsupported notify protocol: MAGIC_HTTP"),
        (subscription_body(notify=http(**without("address"))),
         "Notify properties has no address property"),
        (subscription_body(notify=http(**without("port"))),
         "Notify properties has no port property"),
        (subscription_body(notify=http(**(VALID_HTTP | {"port": "not.a.number"}))),
         "Notify port is not a number"),
        (subscription_body(notify=http(**(VALID_HTTP | {"port": "99999"}))),
         "Notify port is out of the valid range"),
        (subscription_body(notify=http(**(VALID_HTTP | {"port": 0}))),
         "Notify port is out of the valid range"),
        (subscription_body(notify=http(**without("method"))),
         "Notify properties has no method property"),
        (subscription_body(notify=http(**(VALID_HTTP | {"method": "PUTPUT"}))),
         "Unsupported notify HTTP method: PUTPUT"),
        (subscription_body(notify=http(**without("path"))),
         "Notify properties has no path property"),
        (subscription_body(notify={"protocol": "MQTT", "properties": {"port": "1337"}}),
         "Notify properties has no topic member"),
        (subscription_body(notify={"protocol": "MQTT", "properties": {"topic": 5}}),
         "Notify property topic should be a string"),
        (subscription_body(notify=http(**(VALID_HTTP | {"address": ["a"]}))),
         "Notify property address should be a string"),
        (subscription_body(notify=http(**(VALID_HTTP | {"path": {"x": 1}}))),
         "Notify property path should be a string"),
        (subscription_body(notify=http(**(VALID_HTTP | {"method": 7}))),
         "Notify property method should be a string"),
        ({"orchestrationRequest": {"serviceRequirement": {"preferredProviders": []},
                                   "orchestrationFlags": {"MATCHMAKING": True,
                                                          "ONLY_PREFERRED": True}},
          "notifyInterface": HTTP_NOTIFY},
         "ONLY_PREFERRED flag is present, but no preferred provider is defined"),
        (subscription_body("inv@lid-service"),
         "The specified service definition name does not match the naming convention: "
         "inv@lidService"),
        ({**subscription_body(), "orchestrationRequest": {"qosRequirements": {"maxLatencyMs": 5}}},
         "Quality of service requirements are present, but QoS support is disabled"),
        (subscription_body(duration="60"), "duration: A valid integer is required."),
        (subscription_body(duration=3_000_000_000),
         "duration: Ensure this value is less than or equal to 2147483647."),
        (subscription_body(notify={"protocol": "HTTP", "properties": ["address"]}),
         'notifyInterface.properties: Expected a dictionary of items but got type "list".'),
    ])
    def test_it_refuses_invalid_subscriptions(self, api, body, message):
        assert_error(subscribe(api, body), 400, "INVALID_PARAMETER", message, ORIGIN)
        assert not Subscription.objects.exists()

    def test_it_refuses_mqtt_when_no_broker_is_configured(self, api, settings):
        settings.MQTT_BROKER_URL = ""
        assert_error(subscribe(api, subscription_body(notify=mqtt_notify())), 400,
                     "INVALID_PARAMETER", "MQTT notify protocol required, but MQTT is not enabled",
                     ORIGIN)

    @pytest.mark.parametrize("value", ["yes", "1", ""])
    def test_it_refuses_an_invalid_trigger_value(self, api, value):
        assert_error(subscribe(api, subscription_body(), query=f"?trigger={value}"), 400,
                     "INVALID_PARAMETER",
                     f"Invalid trigger value: {value} (true or false expected)", ORIGIN)

    def test_it_needs_an_identity(self, api):
        response = api.post(SUBSCRIBE, subscription_body(), format="json")
        assert_unauthenticated(response, ORIGIN, "No authorization header has been provided")


class UnsubscribeApiTests:
    def test_it_removes_the_own_subscription_then_answers_204(self, api):
        subscription_id = make_subscription(api)
        path = f"{UNSUBSCRIBE}/{subscription_id}"
        first = api.delete(path, **as_system("TemperatureConsumer"))
        assert (first.status_code, first.content) == (200, b"")
        assert not Subscription.objects.exists()
        assert api.delete(path, **as_system("TemperatureConsumer")).status_code == 204

    @pytest.mark.parametrize("placeholder", ["{id}", "%7Bid%7D"])
    def test_it_serves_the_path_the_java_common_library_makes(self, api, placeholder):
        """ArrowheadHttpService appends the id to the registered `/unsubscribe/{id}`."""
        subscription_id = make_subscription(api)
        path = f"{UNSUBSCRIBE}/{placeholder}/{subscription_id}"
        first = api.delete(path, **as_system("TemperatureConsumer"))
        assert (first.status_code, first.content) == (200, b"")
        assert not Subscription.objects.exists()
        assert_error(api.delete(f"{UNSUBSCRIBE}/{placeholder}/x", **as_system("Intruder")), 400,
                     "INVALID_PARAMETER", "Invalid subscription id",
                     f"DELETE {UNSUBSCRIBE}/{{id}}/x")

    def test_it_answers_204_for_an_unknown_id(self, api):
        response = api.delete(f"{UNSUBSCRIBE}/{uuid.uuid4()}", **as_system("TemperatureConsumer"))
        assert (response.status_code, response.content) == (204, b"")

    def test_it_refuses_another_systems_subscription(self, api):
        subscription_id = make_subscription(api)
        response = api.delete(f"{UNSUBSCRIBE}/{subscription_id}", **as_system("Intruder"))
        assert_error(response, 403, "FORBIDDEN", "Intruder is not the subscription owner",
                     f"DELETE {UNSUBSCRIBE}/{subscription_id}")
        assert Subscription.objects.exists()

    @pytest.mark.parametrize("raw", ["6-7", "%20", "not-a-uuid"])
    def test_it_refuses_an_invalid_id(self, api, raw):
        response = api.delete(f"{UNSUBSCRIBE}/{raw}", **as_system("TemperatureConsumer"))
        shown = raw.replace("%20", " ")
        assert_error(response, 400, "INVALID_PARAMETER", "Invalid subscription id",
                     f"DELETE {UNSUBSCRIBE}/{shown}")

    def test_it_cancels_pending_notifications(self, api):
        subscription_id = subscribe(api, subscription_body(), query="?trigger=true").content
        api.delete(f"{UNSUBSCRIBE}/{subscription_id.decode()}", **as_system("TemperatureConsumer"))
        assert NotificationDelivery.objects.get().status == "CANCELLED"
