"""Reservations and exclusivity in pull (SPEC §5 step 7)."""
import datetime as dt

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from orchestration.models import OrchestrationLock
from tests.concurrency import run_together
from tests.orchestration.helpers import instance_ids, pull
from tests.factories import make_instances, make_rules
from tests.store.helpers import instance_body

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("pull_source")]

R120, R30, PLAIN = ("Reservable|heater|1.0.0", "ShortReservable|heater|1.0.0",
                    "Plain|heater|1.0.0")


@pytest.fixture
def heaters():
    make_instances(instance_body("Reservable", "heater", metadata={"allowExclusivity": "120"}),
                   instance_body("ShortReservable", "heater", metadata={"allowExclusivity": 30}),
                   instance_body("Plain", "heater", metadata={}))
    for consumer in ("CarConsumer1", "CarConsumer2"):
        make_rules((consumer, PLAIN, 1), (consumer, R120, 2), (consumer, R30, 3))


def exclusive(duration: int, **flags) -> dict:
    return {"serviceRequirement": {"serviceDefinition": "heater"},
            "exclusivityDuration": duration, "orchestrationFlags": flags}


def until(response) -> dt.datetime:
    value = response.json()["results"][0]["exclusiveUntil"]
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


class ExclusivityTests:
    def test_it_reserves_the_best_reservable_instance_and_forces_matchmaking(self, api, heaters):
        before = timezone.now()
        response = pull(api, exclusive(60))
        assert instance_ids(response) == [R120]
        assert response.json()["warnings"] == ["auto_matchmaking"]
        reserved = until(response)
        assert before + dt.timedelta(seconds=60) <= reserved <= timezone.now() + dt.timedelta(
            seconds=60)
        lock = OrchestrationLock.objects.get()
        assert (lock.service_instance_id, lock.owner, lock.expires_at) == (R120, "CarConsumer1",
                                                                           reserved)

    def test_it_reserves_at_most_what_the_provider_allows(self, api, heaters):
        before = timezone.now()
        response = pull(api, exclusive(500, MATCHMAKING=True))
        assert response.json()["warnings"] == ["part_time_exclusivity"]
        assert until(response) <= timezone.now() + dt.timedelta(seconds=120)
        assert until(response) >= before + dt.timedelta(seconds=120)

    def test_it_does_not_offer_a_reserved_instance_to_another_consumer(self, api, heaters):
        pull(api, exclusive(60))
        other = pull(api, {"serviceRequirement": {"serviceDefinition": "heater"}},
                     consumer="CarConsumer2")
        assert instance_ids(other) == [PLAIN, R30]
        second = pull(api, exclusive(60), consumer="CarConsumer2")
        assert instance_ids(second) == [R30]

    def test_it_gives_the_lock_holder_its_reservation_back(self, api, heaters):
        first = until(pull(api, exclusive(60)))
        again = pull(api, {"serviceRequirement": {"serviceDefinition": "heater"}})
        assert instance_ids(again) == [PLAIN, R120, R30]
        assert "exclusiveUntil" not in again.json()["results"][0]
        assert again.json()["results"][1]["exclusiveUntil"] == first.isoformat().replace(
            "+00:00", "Z")
        assert until(pull(api, exclusive(90))) == first  # kept, not extended
        assert OrchestrationLock.objects.count() == 1

    def test_it_offers_the_instance_again_once_the_reservation_ended(self, api, heaters):
        pull(api, exclusive(60))
        OrchestrationLock.objects.update(expires_at=timezone.now() - dt.timedelta(seconds=1))
        response = pull(api, exclusive(60), consumer="CarConsumer2")
        assert instance_ids(response) == [R120]
        assert OrchestrationLock.objects.get().owner == "CarConsumer2"

    def test_it_warns_when_nothing_can_be_reserved(self, api, heaters):
        OrchestrationLock.objects.bulk_create([
            OrchestrationLock(service_instance_id=iid, owner="Someone", created_at=timezone.now(),
                              expires_at=timezone.now() + dt.timedelta(minutes=5))
            for iid in (R120, R30)])
        response = pull(api, exclusive(60))
        assert instance_ids(response) == [PLAIN]
        assert "exclusiveUntil" not in response.json()["results"][0]
        assert response.json()["warnings"] == ["auto_matchmaking", "not_exclusive"]

    def test_it_keeps_only_reservable_instances_when_asked(self, api, heaters):
        OrchestrationLock.objects.create(service_instance_id=R120, owner="Someone",
                                         created_at=timezone.now(),
                                         expires_at=timezone.now() + dt.timedelta(minutes=5))
        response = pull(api, exclusive(10, ONLY_EXCLUSIVE=True))
        assert instance_ids(response) == [R30]
        # R30 is now CarConsumer1's: nothing reservable is left for CarConsumer2.
        other = pull(api, exclusive(10, ONLY_EXCLUSIVE=True), consumer="CarConsumer2")
        assert instance_ids(other) == []
        assert other.json()["warnings"] == ["auto_matchmaking", "not_exclusive"]

    def test_it_shows_no_exclusivity_without_a_request(self, api, heaters):
        response = pull(api, {"serviceRequirement": {"serviceDefinition": "heater"}})
        assert all("exclusiveUntil" not in r for r in response.json()["results"])
        assert not OrchestrationLock.objects.exists()


@pytest.mark.django_db(transaction=True)
class ReservationContentionTests:
    def test_it_reserves_a_contended_instance_for_exactly_one_consumer(self):
        make_instances(instance_body("Only", "heater", metadata={"allowExclusivity": 60}))
        consumers = [f"Consumer{n}" for n in range(6)]
        make_rules(*[(consumer, "Only|heater|1.0.0", 1) for consumer in consumers])
        answers = run_together(*(lambda c=c: pull(APIClient(), exclusive(30), consumer=c)
                                 for c in consumers))
        responses = dict(zip(consumers, answers))
        assert all(r.status_code == 200 for r in responses.values())
        winners = [c for c, r in responses.items() if r.json()["results"]]
        assert len(winners) == 1
        assert OrchestrationLock.objects.get().owner == winners[0]
        losers = [r for c, r in responses.items() if c not in winners]
        assert all(r.json()["warnings"] == ["auto_matchmaking", "not_exclusive"] for r in losers)
