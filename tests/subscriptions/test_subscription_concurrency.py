"""Concurrent subscribes and unsubscribes of one subscription against the real PostgreSQL:
a subscription that does not exist yet cannot be row-locked, so concurrent subscribes (with an
unsubscribe between them) raced to insert it, and the loser's unique violation was a 500."""
import pytest
from rest_framework.test import APIClient

from subscriptions.services import subscribing
from subscriptions.models import Subscription
from subscriptions.requests import parse_subscribe_request
from subscriptions.serializers import SubscribeSerializer
from tests.concurrency import hold_first_caller, run_together, second_writer_waits
from tests.subscriptions.helpers import UNSUBSCRIBE, subscribe, subscription_body

pytestmark = pytest.mark.django_db(transaction=True)


def _request(**fields):
    serializer = SubscribeSerializer(data=subscription_body(**fields))
    serializer.is_valid(raise_exception=True)
    return parse_subscribe_request(serializer.validated_data, requester="RaceConsumer")


class SubscriptionRaceTests:
    def test_a_second_subscribe_of_a_new_subscription_waits_for_the_first(self, monkeypatch):
        entered, release, first_waiting = hold_first_caller(monkeypatch, subscribing, "_ensure_room")
        request = _request()

        def upsert():
            [(subscription, created)] = subscribing.subscriptions_upsert(
                owner="RaceConsumer", subscribes=[request])
            return created

        outcomes = second_writer_waits(upsert, upsert, entered, release, first_waiting)
        assert outcomes == {"first": True, "second": False,
                            "second reached the write while the first held it": False}
        assert Subscription.objects.filter(owner="RaceConsumer").count() == 1

    def test_a_consumers_subscribe_waits_for_push_managements_and_then_overwrites(
            self, monkeypatch):
        """Push management's subscribe (held in its transaction after its write, holding the
        subscription's lock) and the consumer's subscribe of the same new subscription: the
        second waits for the lock instead of inserting beside it, and once the first
        committed it overwrites, so the later request is the one kept."""
        entered, release, first_waiting = hold_first_caller(monkeypatch, subscribing, "_ensure_room")

        def general():
            [(subscription, created)] = subscribing.subscriptions_upsert(
                owner="RaceConsumer", subscribes=[_request(duration=100)])
            return created

        def consumers():
            _, created = subscribing.subscription_upsert(
                requester="RaceConsumer", subscribe=_request(duration=200), trigger=False)
            return created

        outcomes = second_writer_waits(general, consumers, entered, release,
                                       first_waiting)
        assert outcomes == {"first": True, "second": False,
                            "second reached the write while the first held it": False}
        [stored] = Subscription.objects.filter(owner="RaceConsumer")
        assert stored.duration == 200

    def test_interleaved_subscribes_and_unsubscribes_never_get_a_server_error(self):
        def client() -> list[int]:
            api, statuses = APIClient(), []
            for _ in range(10):
                answer = subscribe(api, subscription_body(), consumer="RaceConsumer")
                statuses.append(answer.status_code)
                if answer.status_code in (200, 201):
                    gone = api.delete(f"{UNSUBSCRIBE}/{answer.content.decode()}",
                                      HTTP_AUTHORIZATION="Bearer SYSTEM//RaceConsumer")
                    statuses.append(gone.status_code)
            return statuses

        statuses = [status for outcome in run_together(*[client] * 8, timeout=120)
                    for status in outcome]
        assert statuses and all(status < 500 for status in statuses), sorted(set(statuses))
        assert set(statuses) <= {200, 201, 204}
