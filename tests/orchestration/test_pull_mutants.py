"""Pull's boundaries, for the mutation check's survivors of orchestration/pull/services.py
(docs/testing.md, "Mutation check"): alive times and exclusivity offers exactly at the limit,
and a consumer's own reservation. Instants are set explicitly, never waited for."""
import datetime as dt

import pytest
from django.utils import timezone

from notifications.models import NotificationDelivery
from orchestration.models import OrchestrationLock
from orchestration.pull.normalization import parse_orchestration_request
from orchestration.pull.services import orchestrate_unrecorded
from store.models import ServiceInstance
from subscriptions.services.evaluation import changes_process
from tests.factories import make_instances, make_rules
from tests.orchestration.helpers import instance_ids, pull
from tests.store.helpers import instance_body
from tests.subscriptions.helpers import feed_skip, mqtt_notify, subscribe, subscription_body

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("pull_source")]

HEATER, PLAIN = "Heater|heater|1.0.0", "Plain|heater|1.0.0"


def heaters(allow_exclusivity) -> None:
    """CarConsumer1's rules: first a plain heater, then one whose provider allows
    `allow_exclusivity` seconds of exclusivity."""
    make_instances(instance_body("Plain", "heater", metadata={}),
                   instance_body("Heater", "heater",
                                 metadata={"allowExclusivity": allow_exclusivity}))
    make_rules(("CarConsumer1", PLAIN, 1), ("CarConsumer1", HEATER, 2))


def exclusive(duration: int, **flags) -> dict:
    return {"serviceRequirement": {"serviceDefinition": "heater"},
            "exclusivityDuration": duration, "orchestrationFlags": flags}


def exclusive_until(response) -> dt.datetime:
    value = response.json()["results"][0]["exclusiveUntil"]
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


def utc(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class ExclusivityOfferTests:
    def test_an_instance_offering_one_second_is_reserved_for_that_second(self, api):
        heaters(1)
        before = timezone.now()
        response = pull(api, exclusive(60, MATCHMAKING=True))
        after = timezone.now()
        assert instance_ids(response) == [HEATER]
        assert response.json()["warnings"] == ["part_time_exclusivity"]
        reserved = exclusive_until(response)
        assert before + dt.timedelta(seconds=1) <= reserved <= after + dt.timedelta(seconds=1)
        assert OrchestrationLock.objects.get().expires_at == reserved

    def test_an_instance_offering_exactly_the_requested_time_is_not_part_time(self, api):
        heaters(60)
        before = timezone.now()
        response = pull(api, exclusive(60, MATCHMAKING=True))
        assert instance_ids(response) == [HEATER]
        assert response.json()["warnings"] == []
        assert exclusive_until(response) >= before + dt.timedelta(seconds=60)

    def test_the_consumer_keeps_its_reservation_when_the_provider_stops_offering_it(self, api):
        """The reservation is the consumer's until it ends, whatever the instance offers
        now: asking again returns it (same end), without warnings."""
        heaters(120)
        first = pull(api, exclusive(60))
        assert instance_ids(first) == [HEATER]
        ServiceInstance.objects.filter(service_instance_id=HEATER).update(metadata={})
        again = pull(api, exclusive(60))
        assert instance_ids(again) == [HEATER]
        assert exclusive_until(again) == exclusive_until(first)
        assert again.json()["warnings"] == ["auto_matchmaking"]
        assert OrchestrationLock.objects.get().owner == "CarConsumer1"


class AliveTimeBoundaryTests:
    @pytest.fixture
    def ends_at(self) -> dt.datetime:
        """The heater's end of life (whole seconds, as the API writes it)."""
        moment = (timezone.now() + dt.timedelta(days=1)).replace(microsecond=0)
        make_instances(instance_body("Heater", "heater", expiresAt=utc(moment)))
        make_rules(("CarConsumer1", HEATER, 1))
        return moment

    def orchestrate_at(self, now: dt.datetime) -> list[str]:
        request = parse_orchestration_request(
            {"serviceRequirement": {"serviceDefinition": "heater"}})
        result = orchestrate_unrecorded(consumer="CarConsumer1", request=request, now=now)
        return [entry.service_instance_id for entry in result.results]

    def test_an_instance_is_offered_until_just_before_it_expires(self, ends_at):
        assert self.orchestrate_at(ends_at - dt.timedelta(microseconds=1)) == [HEATER]

    def test_an_instance_is_not_offered_at_the_instant_it_expires(self, ends_at):
        assert self.orchestrate_at(ends_at) == []

    def test_an_instance_expiring_exactly_at_alives_at_qualifies(self, api, ends_at):
        """`alivesAt` keeps instances that do not expire before it (docs/orchestration.md)."""
        def alive_at(moment):
            return pull(api, {"serviceRequirement": {"serviceDefinition": "heater",
                                                     "alivesAt": utc(moment)}})

        assert instance_ids(alive_at(ends_at)) == [HEATER]
        assert instance_ids(alive_at(ends_at + dt.timedelta(seconds=1))) == []


class NothingMatchedTests:
    def test_exclusivity_asked_with_nothing_matching_warns_not_exclusive(self, api):
        """docs/decisions.md 37: `not_exclusive` is also given when nothing matched; without
        exclusivity asked for, an empty result has no warning."""
        heaters(60)
        asked = pull(api, {**exclusive(30), "serviceRequirement": {
            "serviceDefinition": "heater", "versions": ["9"]}})
        assert instance_ids(asked) == []
        assert asked.json()["warnings"] == ["auto_matchmaking", "not_exclusive"]
        plain = pull(api, {"serviceRequirement": {"serviceDefinition": "heater",
                                                  "versions": ["9"]}})
        assert instance_ids(plain) == []
        assert plain.json()["warnings"] == []


class OnlyExclusiveTests:
    def test_a_service_with_nothing_reservable_is_dropped_with_not_exclusive(self, api):
        """Exclusivity is decided per service definition (docs/orchestration.md step 7): with
        ONLY_EXCLUSIVE, a service none of whose candidates can be reserved gives no result
        and `not_exclusive`, also when another service of the same pull was reserved."""
        make_instances(instance_body("Plain", "heater", metadata={}),
                       instance_body("Cooler", "cooler", metadata={"allowExclusivity": 60}))
        make_rules(("CarConsumer1", PLAIN, 1), ("CarConsumer1", "Cooler|cooler|1.0.0", 1))
        response = pull(api, {"exclusivityDuration": 30,
                              "orchestrationFlags": {"ONLY_EXCLUSIVE": True}})
        assert instance_ids(response) == ["Cooler|cooler|1.0.0"]
        assert response.json()["warnings"] == ["auto_matchmaking", "not_exclusive"]
        alone = pull(api, exclusive(30, ONLY_EXCLUSIVE=True))  # the heater on its own
        assert instance_ids(alone) == []
        assert alone.json()["warnings"] == ["auto_matchmaking", "not_exclusive"]


class SubscriptionPushTests:
    def test_a_pushed_exclusive_result_is_reserved_for_real(self, api):
        """A subscription's evaluation previews without reserving; a result that asks for
        exclusivity is pushed from the committed run, so the `exclusiveUntil` the consumer
        is told is a reservation it holds."""
        heaters(120)
        body = subscription_body("heater", notify=mqtt_notify("t/heater"))
        body["orchestrationRequest"]["exclusivityDuration"] = 60
        subscribe(api, body, consumer="CarConsumer1")
        feed_skip()
        make_instances(instance_body("Heater", "heater",  # a change of its result
                                     metadata={"allowExclusivity": 120, "zone": "north"}))
        assert changes_process() == 1
        pushed = NotificationDelivery.objects.get().payload["payload"]
        assert [r["serviceInstanceId"] for r in pushed["results"]] == [HEATER]
        lock = OrchestrationLock.objects.get()
        assert (lock.service_instance_id, lock.owner) == (HEATER, "CarConsumer1")
        assert pushed["results"][0]["exclusiveUntil"] == lock.expires_at.isoformat().replace(
            "+00:00", "Z")
