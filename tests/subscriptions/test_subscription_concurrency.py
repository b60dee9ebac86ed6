"""Concurrent subscribes and unsubscribes of one subscription against the real PostgreSQL:
a subscription that does not exist yet cannot be row-locked, so concurrent subscribes (with an
unsubscribe between them) raced to insert it, and the loser's unique violation was a 500."""
import threading

import pytest
from django.db import connection
from rest_framework.test import APIClient

from subscriptions import services
from subscriptions.models import Subscription
from subscriptions.requests import parse_subscribe_request
from subscriptions.serializers import SubscribeSerializer
from tests.store.concurrency import hold_first_caller, second_writer_waits
from tests.subscriptions.helpers import UNSUBSCRIBE, subscribe, subscription_body

pytestmark = pytest.mark.django_db(transaction=True)


class SubscriptionRaceTests:
    def test_a_second_subscribe_of_a_new_subscription_waits_for_the_first(self, monkeypatch):
        entered, release, first_waiting = hold_first_caller(monkeypatch, services, "_apply")
        serializer = SubscribeSerializer(data=subscription_body())
        serializer.is_valid(raise_exception=True)
        request = parse_subscribe_request(serializer.validated_data, requester="RaceConsumer")

        def upsert():
            subscription, created = services.subscription_upsert(
                requester="RaceConsumer", subscribe=request, trigger=False)
            return created

        outcomes = second_writer_waits(upsert, upsert, entered, release, first_waiting)
        assert outcomes == {"first": True, "second": False,
                            "second reached the write while the first held it": False}
        assert Subscription.objects.filter(owner="RaceConsumer").count() == 1

    def test_interleaved_subscribes_and_unsubscribes_never_get_a_server_error(self):
        statuses: list[int] = []

        def client(rounds: int) -> None:
            api = APIClient()
            try:
                for _ in range(rounds):
                    answer = subscribe(api, subscription_body(), consumer="RaceConsumer")
                    statuses.append(answer.status_code)
                    if answer.status_code in (200, 201):
                        gone = api.delete(f"{UNSUBSCRIBE}/{answer.content.decode()}",
                                          HTTP_AUTHORIZATION="Bearer SYSTEM//RaceConsumer")
                        statuses.append(gone.status_code)
            finally:
                connection.close()

        threads = [threading.Thread(target=client, args=(10,)) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert statuses and all(status < 500 for status in statuses), sorted(set(statuses))
        assert set(statuses) <= {200, 201, 204}
