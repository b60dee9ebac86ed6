"""A notify topic belongs to the system it notifies (issue 29, item 1): consumer B subscribing
with consumer A's topic got A's topic B's results and tokens; a notify topic on the MQTT
interface's request topic made each push a request. Both are refused 400, whoever subscribes
(the consumer itself, push management for a target, the MQTT interface's subscribe, which is
the HTTP operation), also when two systems race for one free topic."""
import os
import subprocess
import sys

import pytest

from conventions.exceptions import InvalidParameter
from subscriptions.services import subscribing
from subscriptions.models import Subscription
from subscriptions.requests import parse_subscribe_request
from subscriptions.serializers import SubscribeSerializer
from tests.concurrency import hold_first_caller, second_writer_waits
from tests.helpers import assert_error
from tests.subscriptions.helpers import (
    PUSH_SUBSCRIBE,
    SUBSCRIBE,
    mqtt_notify,
    push_element,
    push_subscribe,
    stored_subscriptions,
    subscribe,
    subscription_body,
)
from tests.worker import ROOT

TAKEN = ("Notify property topic plant/a is the notify topic of another system: a notify "
         "topic belongs to the system it notifies")
REQUEST_TOPIC = "arrowhead/serviceorchestration/orchestration/pull"


def mqtt_body(topic: str = "plant/a", service_definition: str = "temperatureInfo") -> dict:
    return subscription_body(service_definition, notify=mqtt_notify(topic))


@pytest.mark.django_db
class TopicOwnershipTests:
    def test_another_consumer_cannot_subscribe_with_a_consumers_topic(self, api):
        assert subscribe(api, mqtt_body(), consumer="ConsumerA").status_code == 201
        before = stored_subscriptions()
        refused = subscribe(api, mqtt_body(), consumer="ConsumerB")
        assert_error(refused, 400, "INVALID_PARAMETER", TAKEN, f"POST {SUBSCRIBE}")
        assert stored_subscriptions() == before

    def test_the_owner_uses_its_topic_for_several_subscriptions(self, api):
        assert subscribe(api, mqtt_body(), consumer="ConsumerA").status_code == 201
        other = subscribe(api, mqtt_body(service_definition="humidityInfo"), consumer="ConsumerA")
        assert other.status_code == 201
        assert subscribe(api, mqtt_body(), consumer="ConsumerA").status_code == 200

    def test_an_overwrite_cannot_move_onto_another_systems_topic(self, api):
        assert subscribe(api, mqtt_body(), consumer="ConsumerA").status_code == 201
        assert subscribe(api, mqtt_body("plant/b"), consumer="ConsumerB").status_code == 201
        refused = subscribe(api, mqtt_body(), consumer="ConsumerB")
        assert_error(refused, 400, "INVALID_PARAMETER", TAKEN, f"POST {SUBSCRIBE}")
        assert Subscription.objects.get(target="ConsumerB").notify_properties == {
            "topic": "plant/b"}

    def test_push_management_subscribes_on_a_topic_for_the_system_it_belongs_to(self, api):
        assert subscribe(api, mqtt_body(), consumer="ConsumerA").status_code == 201
        for_owner = push_subscribe(api, push_element("ConsumerA", notify=mqtt_notify("plant/a"),
                                                     service_definition="humidityInfo"))
        assert for_owner.status_code == 201
        before = stored_subscriptions()
        for_another = push_subscribe(api, push_element("ConsumerB",
                                                       notify=mqtt_notify("plant/a")))
        assert_error(for_another, 400, "INVALID_PARAMETER", TAKEN, f"POST {PUSH_SUBSCRIBE}")
        assert stored_subscriptions() == before

    def test_a_topic_pushed_to_for_a_target_is_the_targets_own(self, api):
        assert push_subscribe(api, push_element("ConsumerA",
                                                notify=mqtt_notify("plant/a"))).status_code == 201
        refused = subscribe(api, mqtt_body(), consumer="ConsumerB")
        assert_error(refused, 400, "INVALID_PARAMETER", TAKEN, f"POST {SUBSCRIBE}")
        assert subscribe(api, mqtt_body(), consumer="ConsumerA").status_code == 201

    def test_one_push_subscribe_cannot_give_one_topic_to_two_systems(self, api):
        refused = push_subscribe(api, push_element("ConsumerA", notify=mqtt_notify("plant/a")),
                                 push_element("ConsumerB", notify=mqtt_notify("plant/a")))
        assert_error(refused, 400, "INVALID_PARAMETER", TAKEN, f"POST {PUSH_SUBSCRIBE}")
        assert not Subscription.objects.exists()

    def test_a_freed_topic_can_be_taken(self, api):
        created = subscribe(api, mqtt_body(), consumer="ConsumerA")
        api.delete(f"/serviceorchestration/orchestration/unsubscribe/{created.content.decode()}",
                   HTTP_AUTHORIZATION="Bearer SYSTEM//ConsumerA")
        assert subscribe(api, mqtt_body(), consumer="ConsumerB").status_code == 201

    @pytest.mark.parametrize("topic", [REQUEST_TOPIC, "arrowhead/serviceorchestration/x",
                                       "arrowhead/serviceorchestration"])
    def test_a_notify_topic_cannot_be_the_mqtt_interfaces(self, api, topic):
        refused = subscribe(api, mqtt_body(topic))
        assert_error(refused, 400, "INVALID_PARAMETER",
                     f"Notify property topic {topic} is one of the MQTT interface's topics "
                     "(under arrowhead/serviceorchestration/)", f"POST {SUBSCRIBE}")
        refused = push_subscribe(api, push_element(notify=mqtt_notify(topic)))
        assert refused.status_code == 400
        assert not Subscription.objects.exists()


def _request(system: str):
    serializer = SubscribeSerializer(data=mqtt_body())
    serializer.is_valid(raise_exception=True)
    return parse_subscribe_request(serializer.validated_data, requester=system)


@pytest.mark.django_db(transaction=True)
class TopicRaceTests:
    def test_two_systems_subscribing_on_one_free_topic_do_not_both_get_it(self, monkeypatch):
        """The first (push management's path) holds inside its transaction after claiming the
        topic and writing; the second (the consumer's subscribe) waits for the topic's lock
        and then reads the first one's row."""
        entered, release, first_waiting = hold_first_caller(monkeypatch, subscribing, "_ensure_room")

        def first():
            [(_, created)] = subscribing.subscriptions_upsert(
                owner="ConsumerA", subscribes=[_request("ConsumerA")])
            return created

        def second():
            return subscribing.subscription_upsert(requester="ConsumerB",
                                                subscribe=_request("ConsumerB"), trigger=False)

        outcomes = second_writer_waits(first, second, entered, release, first_waiting)
        assert outcomes["first"] is True
        assert isinstance(outcomes["second"], InvalidParameter), outcomes
        assert outcomes["second"].message == TAKEN
        assert list(Subscription.objects.values_list("target", flat=True)) == ["ConsumerA"]


@pytest.mark.django_db
class SystemTopicRootTests:
    """With MQTT_SYSTEM_TOPIC_ROOT (compose's), a notify topic must be its target's, where
    the shipped broker lets the target read: nobody takes another system's topic first."""

    @pytest.fixture(autouse=True)
    def root(self, settings):
        settings.MQTT_SYSTEM_TOPIC_ROOT = "arrowhead/systems/"

    def test_a_notify_topic_is_under_its_targets_root(self, api):
        own = "arrowhead/systems/ConsumerB/temperature"
        assert subscribe(api, mqtt_body(own), consumer="ConsumerB").status_code == 201
        for topic in ("arrowhead/systems/ConsumerA/temperature", "plant/b"):
            refused = subscribe(api, mqtt_body(topic), consumer="ConsumerB")
            assert_error(refused, 400, "INVALID_PARAMETER",
                         f"Notify property topic {topic} is not ConsumerB's: it is not under "
                         "arrowhead/systems/ConsumerB/ (MQTT_SYSTEM_TOPIC_ROOT)",
                         f"POST {SUBSCRIBE}")

    def test_push_management_subscribes_under_the_targets_root(self, api):
        theirs = mqtt_notify("arrowhead/systems/ConsumerA/temperature")
        assert push_subscribe(api, push_element("ConsumerA", notify=theirs)).status_code == 201
        refused = push_subscribe(api, push_element(
            "ConsumerA", notify=mqtt_notify("arrowhead/systems/Sysop/temperature"),
            service_definition="humidityInfo"))
        assert refused.status_code == 400
        assert Subscription.objects.count() == 1


@pytest.mark.parametrize("root", ["arrowhead/systems", "arrowhead/+/", "arrowhead/#/"])
def test_a_topic_root_that_is_not_a_plain_prefix_stops_the_start(root):
    started = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"], cwd=ROOT, capture_output=True,
        text=True, env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings",
                        "MQTT_SYSTEM_TOPIC_ROOT": root})
    assert started.returncode != 0
    assert "MQTT_SYSTEM_TOPIC_ROOT must be empty or a topic name ending with '/'" in \
        started.stderr
