"""Push management's subscribe (reference-simple §6.8, black-box PS1–PS4)."""
import pytest

from subscriptions.models import Subscription
from tests.factories import grant, make_push_subscription
from tests.helpers import SYSOP, as_system, assert_error, assert_forbidden, assert_refused
from tests.subscriptions.helpers import (
    HTTP_NOTIFY,
    PUSH_SUBSCRIBE,
    mqtt_notify,
    push_element,
    push_subscribe,
    stored_subscriptions,
    subscribe,
    subscription_body,
)

pytestmark = pytest.mark.django_db

ORIGIN = f"POST {PUSH_SUBSCRIBE}"


class PushSubscribeApiTests:
    def test_it_subscribes_on_behalf_of_a_consumer(self, api):  # PS3
        response = push_subscribe(api, push_element("temperature-consumer", duration=60))
        assert response.status_code == 201, response.content
        body = response.json()
        subscription = Subscription.objects.get()
        assert body["count"] == 1
        entry = body["entries"][0]
        assert set(entry) == {"id", "ownerSystemName", "targetSystemName",
                              "orchestrationRequest", "notifyInterface", "expiredAt",
                              "createdAt"}
        assert (entry["id"], entry["ownerSystemName"], entry["targetSystemName"]) == (
            str(subscription.id), "Sysop", "TemperatureConsumer")
        assert entry["orchestrationRequest"] == {
            "serviceRequirement": {"serviceDefinition": "temperatureInfo"}}
        assert entry["notifyInterface"] == {
            "protocol": "HTTP", "properties": {"address": "127.0.0.1", "port": 8080,
                                               "method": "POST", "path": "/notify"}}
        assert entry["createdAt"].endswith("Z") and entry["expiredAt"].endswith("Z")
        assert (subscription.owner, subscription.target) == ("Sysop", "TemperatureConsumer")

    def test_it_leaves_expired_at_out_without_a_duration(self, api):
        notify = {"protocol": "mqtt", "properties": {"Topic": "t/1"}}
        entry = push_subscribe(api, push_element(notify=notify)).json()["entries"][0]
        assert "expiredAt" not in entry
        assert entry["notifyInterface"] == {"protocol": "MQTT", "properties": {"topic": "t/1"}}

    def test_it_creates_several_at_once(self, api):
        response = push_subscribe(api, push_element("ConsumerA"), push_element("ConsumerB"),
                                  push_element("ConsumerA", "pressureInfo"))
        assert response.status_code == 201
        assert response.json()["count"] == 3
        assert Subscription.objects.count() == 3

    def test_it_overwrites_the_same_owner_target_and_service_in_place(self, api):
        first = push_subscribe(api, push_element()).json()["entries"][0]
        again = push_subscribe(api, push_element(notify=mqtt_notify(), duration=30))
        assert again.status_code == 201
        entry = again.json()["entries"][0]
        assert entry["id"] == first["id"]
        assert entry["notifyInterface"]["protocol"] == "MQTT"
        assert Subscription.objects.get().duration == 30

    def test_it_tells_owners_apart_for_one_target_and_service(self, api, settings):
        settings.MANAGEMENT_WHITELIST = ["PlantManager"]
        own = subscribe(api, subscription_body()).content.decode()
        by_sysop = make_push_subscription(api)
        by_manager = make_push_subscription(api, owner="PlantManager")
        assert len({own, by_sysop, by_manager}) == 3
        assert Subscription.objects.count() == 3
        # The consumer's own subscribe still overwrites its own one only.
        assert subscribe(api, subscription_body()).content.decode() == own

    def test_it_writes_nothing_when_one_element_is_invalid(self, api):
        bad = push_element("ConsumerB", notify={"protocol": "HTTP", "properties": {
            **HTTP_NOTIFY["properties"], "port": "0"}})
        assert_refused(lambda: push_subscribe(api, push_element("ConsumerA"), bad),  # PS4
                       "Notify port is out of the valid range", ORIGIN,
                       state=stored_subscriptions)

    def test_it_refuses_an_element_without_target(self, api):  # PS1
        element = subscription_body(notify=mqtt_notify())
        assert_refused(lambda: push_subscribe(api, element), "Target system name is missing",
                       ORIGIN, state=stored_subscriptions)
        assert_refused(lambda: push_subscribe(api, {**element, "targetSystemName": "  "}),
                       "Target system name is missing", ORIGIN, state=stored_subscriptions)

    def test_it_validates_the_target_name(self, api):
        assert_refused(lambda: push_subscribe(api, push_element("inv@lid")),
                       "The specified system name does not match the naming convention: Inv@lid",
                       ORIGIN, state=stored_subscriptions)

    def test_it_refuses_duplicates_in_the_request(self, api):  # PS2
        twice = push_element("TemperatureConsumer1", "service1")
        assert_refused(lambda: push_subscribe(api, twice, twice),
                       "Duplicated subscription request for system TemperatureConsumer1 and "
                       "service definition service1", ORIGIN, state=stored_subscriptions)
        # Duplicates are found after normalization (the reference compares raw values).
        assert_refused(lambda: push_subscribe(api, push_element("consumer-a", None),
                                              push_element("ConsumerA", None)),
                       "Duplicated subscription request for system ConsumerA and service "
                       "definition null", ORIGIN, state=stored_subscriptions)

    @pytest.mark.parametrize("body", [None, {}, {"subscriptions": None},
                                      {"subscriptions": []}, {"subscriptions": [None]}])
    def test_it_refuses_a_missing_payload(self, api, body):
        assert_refused(lambda: api.post(PUSH_SUBSCRIBE, body, format="json", **SYSOP),
                       "Request payload is missing", ORIGIN, state=stored_subscriptions)

    def test_it_refuses_a_null_body(self, api):
        assert_refused(lambda: api.post(PUSH_SUBSCRIBE, "null", content_type="application/json",
                                        **SYSOP),
                       "Request payload is missing", ORIGIN, state=stored_subscriptions)

    def test_it_checks_each_element_like_subscribe(self, api):
        no_protocol = push_element(notify={"properties": {"topic": "t"}})
        assert_refused(lambda: push_subscribe(api, no_protocol), "Notify protocol is missing",
                       ORIGIN, state=stored_subscriptions)
        assert_refused(lambda: push_subscribe(api, push_element(duration=0)),
                       "Subscription duration must be greater than 0", ORIGIN,
                       state=stored_subscriptions)
        smtp = push_element(notify={"protocol": "smtp", "properties": {"to": "x"}})
        assert_refused(lambda: push_subscribe(api, smtp), "Unsupported notify protocol: SMTP",
                       ORIGIN, state=stored_subscriptions)

    def test_it_bounds_the_list(self, api, settings):
        settings.MAX_BULK_SIZE = 2
        assert_refused(lambda: push_subscribe(api, *(push_element(f"Consumer{i}")
                                                     for i in range(3))),
                       "Too many entries: at most 2 may be created in one request", ORIGIN,
                       state=stored_subscriptions)

    def test_it_bounds_the_subscriptions_per_target_whoever_owns_them(self, api, settings):
        settings.MAX_SUBSCRIPTIONS_PER_SYSTEM = 2
        assert subscribe(api, subscription_body("a")).status_code == 201
        assert push_subscribe(api, push_element(service_definition="b")).status_code == 201
        response = push_subscribe(api, push_element(service_definition="c"))
        assert_error(response, 400, "INVALID_PARAMETER",
                     "Too many subscriptions: TemperatureConsumer already has 2 (at most 2)",
                     ORIGIN)
        # Overwriting is always allowed.
        assert push_subscribe(api, push_element(service_definition="b")).status_code == 201

    def test_it_needs_management_permission(self, api, settings):
        settings.MANAGEMENT_POLICY = "sysop-only"
        response = push_subscribe(api, push_element(), owner="TemperatureConsumer")
        assert_forbidden(response, ORIGIN)

    def test_it_lets_a_system_with_the_add_permission_subscribe(self, api, settings):
        settings.MANAGEMENT_POLICY = "permission"
        grant("PlantManager", "add_subscription")
        response = push_subscribe(api, push_element(), owner="PlantManager")
        assert response.status_code == 201
        assert response.json()["entries"][0]["ownerSystemName"] == "PlantManager"
        assert api.post(PUSH_SUBSCRIBE, {}, format="json",
                        **as_system("Stranger")).status_code == 403
