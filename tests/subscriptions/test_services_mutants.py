"""Subscription services, for the mutation check's survivors of subscriptions/services.py
(docs/testing.md, "Mutation check"): overwriting several subscriptions in place, the limit
per system reached by one request, a pending notification kept when its subscription is
overwritten with the same notify interface, and no push when only a reservation's end
differs."""
import datetime as dt
import uuid

import pytest
from django.utils import timezone

from notifications.models import NotificationDelivery
from notifications.outbox import Notification, deliveries_create
from orchestration.models import OrchestrationLock
from subscriptions.models import Subscription
from subscriptions.services.evaluation import changes_process, subscriptions_evaluate
from tests.factories import make_instances, make_rules
from tests.store.helpers import instance_body
from tests.subscriptions.helpers import (
    feed_skip,
    flagged_subscriptions,
    flags_set_all,
    is_flagged,
    mqtt_notify,
    push_element,
    push_subscribe,
    subscribe,
    subscription_body,
)

pytestmark = pytest.mark.django_db

Status = NotificationDelivery.Status


class PushSubscribeOverwriteTests:
    def test_it_overwrites_several_subscriptions_in_place_in_one_request(self, api):
        elements = (push_element("ConsumerA"), push_element("ConsumerB"))
        first = push_subscribe(api, *elements)
        assert first.status_code == 201, first.content
        again = push_subscribe(api, *(dict(element, duration=30) for element in elements))
        assert again.status_code == 201, again.content
        assert [e["id"] for e in again.json()["entries"]] == [
            e["id"] for e in first.json()["entries"]]
        assert sorted(Subscription.objects.values_list("target", "service_definition",
                                                       "duration")) == [
            ("ConsumerA", "temperatureInfo", 30), ("ConsumerB", "temperatureInfo", 30)]

    def test_one_request_may_bring_a_system_to_its_limit(self, api, settings):
        settings.MAX_SUBSCRIPTIONS_PER_SYSTEM = 2
        response = push_subscribe(api, push_element("ConsumerA"),
                                  push_element("ConsumerA", "pressureInfo"))
        assert response.status_code == 201, response.content
        assert Subscription.objects.filter(target="ConsumerA").count() == 2

    def test_an_unchanged_notify_interface_keeps_the_pending_notification(self, api):
        """Overwriting a subscription cancels its unfinished notifications only when they
        would go to an interface it no longer has."""
        element = push_element("ConsumerA", notify=mqtt_notify("t/a"))
        push_subscribe(api, element)
        subscription = Subscription.objects.get()
        [pending] = deliveries_create([Notification(subscription.id, "MQTT", {"topic": "t/a"},
                                                    {"results": []}, None, "ConsumerA")])
        assert push_subscribe(api, dict(element, duration=30)).status_code == 201
        pending.refresh_from_db()
        assert pending.status == Status.PENDING
        push_subscribe(api, dict(element, notifyInterface=mqtt_notify("t/b")))
        pending.refresh_from_db()
        assert pending.status == Status.CANCELLED


class ReservationEndTests:
    def test_a_new_reservation_end_alone_is_not_pushed_again(self, api):
        """The subscriber was told its result is exclusive; when that reservation has
        ended, a re-evaluation (which would reserve again, ending later) gives the same
        result: nothing is pushed."""
        make_instances(instance_body("ProviderA", metadata={"allowExclusivity": 60}))
        make_rules(("TemperatureConsumer", "ProviderA|temperatureInfo|1.0.0", 1))
        body = subscription_body(notify=mqtt_notify("t/exclusive"))
        body["orchestrationRequest"]["exclusivityDuration"] = 60
        assert subscribe(api, body, query="?trigger=true").status_code == 201
        assert OrchestrationLock.objects.count() == 1
        first = NotificationDelivery.objects.get()
        assert first.payload["payload"]["results"][0]["exclusiveUntil"]
        OrchestrationLock.objects.all().delete()  # the reservation ended
        feed_skip()  # the setup's own changes
        flags_set_all()
        assert changes_process() == 0
        assert list(NotificationDelivery.objects.all()) == [first]
        assert not is_flagged(Subscription.objects.get())


class PushNowTests:
    """The admin's "push now" (`subscriptions_evaluate(force=True)`) counts what it queued."""

    def test_a_subscription_is_not_pushed_at_the_instant_it_expires(self, api, monkeypatch):
        subscribe(api, subscription_body(notify=mqtt_notify("t/ends"), duration=60))
        subscription = Subscription.objects.get()
        ends = subscription.expires_at
        monkeypatch.setattr(timezone, "now", lambda: ends)
        assert subscriptions_evaluate([subscription.id], force=True).pushed == 0
        assert not NotificationDelivery.objects.exists()
        monkeypatch.setattr(timezone, "now", lambda: ends - dt.timedelta(microseconds=1))
        assert subscriptions_evaluate([subscription.id], force=True).pushed == 1
        assert NotificationDelivery.objects.count() == 1

    def test_a_removed_subscription_is_not_counted_as_pushed(self):
        assert subscriptions_evaluate([uuid.uuid4()], force=True).pushed == 0


class BatchEvaluationTests:
    """A round evaluates every flagged subscription: one that is left out (expired) or
    fails does not keep the others from being pushed."""

    @pytest.fixture
    def flagged(self, api) -> list[Subscription]:
        """Two flagged subscriptions whose last result is unknown (any result is news, as
        after a subscribe whose preview failed), in the order a batch takes them (by pk)."""
        for definition in ("temperatureInfo", "pressureInfo"):
            subscribe(api, subscription_body(definition, notify=mqtt_notify(f"t/{definition}")))
        Subscription.objects.update(last_fingerprint="")
        flags_set_all()
        return list(Subscription.objects.order_by("pk"))

    def test_a_subscription_expiring_at_the_instant_of_the_round_is_skipped(self, flagged,
                                                                            monkeypatch):
        ends = timezone.now() + dt.timedelta(minutes=5)
        Subscription.objects.filter(pk=flagged[0].pk).update(expires_at=ends)
        monkeypatch.setattr(timezone, "now", lambda: ends)
        assert changes_process() == 1
        assert list(NotificationDelivery.objects.values_list("subscription_id", flat=True)) == [
            flagged[1].id]

    def test_a_subscription_whose_evaluation_fails_stays_flagged_alone(self, flagged):
        Subscription.objects.filter(pk=flagged[0].pk).update(orchestration_request={
            "serviceRequirement": {"serviceDefinition": "temperatureInfo"},
            "exclusivityDuration": 0})  # refused when parsed
        assert changes_process() == 1
        assert list(NotificationDelivery.objects.values_list("subscription_id", flat=True)) == [
            flagged[1].id]
        assert list(flagged_subscriptions()) == [flagged[0]]
