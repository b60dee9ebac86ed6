"""Notify targets are validated fully at subscribe time (issue 10 item 11): a subscription
that could never be delivered is a 400 naming the property, and nothing is stored."""
import pytest

from subscriptions.models import Subscription
from tests.helpers import assert_error, assert_refused
from tests.subscriptions.helpers import (
    SUBSCRIBE,
    mqtt_notify,
    stored_subscriptions,
    subscribe,
    subscription_body,
)

pytestmark = pytest.mark.django_db

ORIGIN = f"POST {SUBSCRIBE}"
VALID_HTTP = {"address": "127.0.0.1", "port": 8080, "method": "POST", "path": "/notify"}
EURO = "\u20ac"  # three bytes in UTF-8


def http(**changes) -> dict:
    return {"protocol": "HTTP", "properties": {**VALID_HTTP, **changes}}


def stored_properties(api, notify) -> dict:
    response = subscribe(api, subscription_body(notify=notify))
    assert response.status_code == 201, response.content
    return Subscription.objects.get().notify_properties


ADDRESS_CHARACTERS = "Notify property address should not contain spaces, control or format characters"
PATH_CHARACTERS = "Notify property path should not contain spaces, control or format characters"
IDNA = "Notify property address is not a valid internationalized domain name"
TOPIC_CHARACTERS = "Notify property topic should not contain control or format characters"


class MqttTopicTests:
    @pytest.mark.parametrize("topic, message", [
        ("plant/+/notify", "Notify property topic should not contain the wildcards + or #"),
        ("plant/#", "Notify property topic should not contain the wildcards + or #"),
        ("$SYS/notify", "Notify property topic should not start with $ (reserved for the broker)"),
        ("plant/\u202enotify", TOPIC_CHARACTERS),
        ("plant/\x07", TOPIC_CHARACTERS),
    ])
    def test_it_refuses_topics_that_cannot_be_published(self, api, topic, message):
        assert_refused(lambda: subscribe(api, subscription_body(notify=mqtt_notify(topic))),
                       message, ORIGIN, state=stored_subscriptions)

    def test_it_refuses_a_hundred_thousand_character_topic(self, api):
        notify = mqtt_notify("t" * 100_000)
        assert_refused(lambda: subscribe(api, subscription_body(notify=notify)),
                       "notifyInterface.properties.topic: Ensure no string has more than 4096 "
                       "characters.", ORIGIN, state=stored_subscriptions)

    def test_it_refuses_a_topic_over_the_mqtt_limit_in_utf8_bytes(self, api, settings):
        settings.MAX_STRING_LENGTH = 100_000
        topic = EURO * 21_846  # 21,846 characters, 65,538 bytes
        assert_refused(lambda: subscribe(api, subscription_body(notify=mqtt_notify(topic))),
                       "Notify property topic should not be longer than 65535 bytes (UTF-8)",
                       ORIGIN, state=stored_subscriptions)

    def test_it_accepts_a_topic_at_the_mqtt_limit(self, api, settings):
        settings.MAX_STRING_LENGTH = 100_000
        topic = EURO * 21_845  # 65,535 bytes
        assert stored_properties(api, mqtt_notify(topic)) == {"topic": topic}


class HttpAddressTests:
    @pytest.mark.parametrize("address, message", [
        ("exa mple.com", ADDRESS_CHARACTERS),
        ("\u202eexample.com", ADDRESS_CHARACTERS),
        ("example\u200b.com", ADDRESS_CHARACTERS),
        ("example.com\x01", ADDRESS_CHARACTERS),
        ("under_score.example.com",
         "Notify property address: Address verification failure: invalid host name: "
         "under_score.example.com"),
        ("999.1.1.1", "Notify property address: Address verification failure: invalid host "
         "name: 999.1.1.1"),
        ("224.0.0.1", "Notify property address: Address verification failure: multicast "
         "address is not allowed: 224.0.0.1"),
        ("00:1a:2b:3c:4d:5e", "Notify property address: Unacceptable address type in property "
         "value: MAC"),
        ("xn--.example", "Notify property address: Address verification failure: invalid host "
         "name: xn--.example"),
        ("b\u00fccher\ue000.example", IDNA),
        ("\u05d0a.example", IDNA),  # mixes right-to-left and left-to-right in one label
    ])
    def test_it_refuses_addresses_that_are_not_hosts(self, api, address, message):
        assert_refused(lambda: subscribe(api, subscription_body(notify=http(address=address))),
                       message, ORIGIN, state=stored_subscriptions)

    @pytest.mark.parametrize("address, stored", [
        ("Example.COM", "example.com"),
        ("localhost", "localhost"),
        ("::1", "::1"),
        ("[::1]", "::1"),
        ("B\u00fccher.example", "xn--bcher-kva.example"),
    ])
    def test_it_stores_the_canonical_address(self, api, address, stored):
        assert stored_properties(api, http(address=address))["address"] == stored


class HttpPathTests:
    @pytest.mark.parametrize("path, message", [
        ("/no tify", PATH_CHARACTERS),
        ("/notify\r\nHost: evil", PATH_CHARACTERS),
        ("/\u202enotify", PATH_CHARACTERS),
        ("/b\u00fccher", "Notify property path should contain ASCII characters only "
         "(percent-encode the others)"),
    ])
    def test_it_refuses_paths_that_cannot_be_requested(self, api, path, message):
        assert_refused(lambda: subscribe(api, subscription_body(notify=http(path=path))), message,
                       ORIGIN, state=stored_subscriptions)

    def test_it_starts_the_path_with_a_slash(self, api):
        assert stored_properties(api, http(path="hooks/x?k=1"))["path"] == "/hooks/x?k=1"


class SubscriptionCountTests:
    """Every subscription of a system is re-evaluated whenever its rules or instances change:
    their number per system is bounded (MAX_SUBSCRIPTIONS_PER_SYSTEM)."""

    def test_it_refuses_a_subscription_past_the_limit(self, api, settings):
        settings.MAX_SUBSCRIPTIONS_PER_SYSTEM = 2
        for definition in ("first", "second"):
            assert subscribe(api, subscription_body(definition)).status_code == 201
        assert_error(subscribe(api, subscription_body("third")), 400, "INVALID_PARAMETER",
                     "Too many subscriptions: TemperatureConsumer already has 2 (at most 2)",
                     ORIGIN)
        assert Subscription.objects.count() == 2

    def test_it_still_overwrites_and_counts_per_system(self, api, settings):
        settings.MAX_SUBSCRIPTIONS_PER_SYSTEM = 1
        assert subscribe(api, subscription_body("first")).status_code == 201
        assert subscribe(api, subscription_body("first", duration=5)).status_code == 200
        assert subscribe(api, subscription_body("first"), consumer="Other").status_code == 201


class HttpPortTests:
    @pytest.mark.parametrize("port", ["\u00b2", "8\u00b9", "-\u00b3"])
    def test_it_refuses_digits_that_are_not_decimal(self, api, port):
        assert_refused(lambda: subscribe(api, subscription_body(notify=http(port=port))),
                       "Notify port is not a number", ORIGIN, state=stored_subscriptions)

    def test_it_refuses_a_port_of_thousands_of_digits(self, api, settings):
        settings.MAX_STRING_LENGTH = 100_000
        assert_refused(lambda: subscribe(api, subscription_body(notify=http(port="1" * 5000))),
                       "Notify port is out of the valid range", ORIGIN, state=stored_subscriptions)

    def test_it_accepts_leading_zeros(self, api):
        assert stored_properties(api, http(port="0000080"))["port"] == 80
