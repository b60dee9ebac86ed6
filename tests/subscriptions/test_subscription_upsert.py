"""The subscribe's upsert (subscriptions/services/subscribing.py `subscription_upsert`): what it
writes for a new subscription and an overwrite, the notify interface's change, the room
per target, and that it is part of the caller's transaction."""
import datetime as dt

import pytest
from django.forms.models import model_to_dict
from django.db import connection, transaction
from django.utils import timezone

from conventions.exceptions import InvalidParameter
from notifications.models import NotificationDelivery
from subscriptions.services import subscribing
from subscriptions.models import Subscription
from subscriptions.requests import parse_subscribe_request
from subscriptions.serializers import SubscribeSerializer
from tests.subscriptions.helpers import (
    HTTP_NOTIFY,
    flags_clear_all,
    is_flagged,
    mqtt_notify,
    subscription_body,
)

pytestmark = pytest.mark.django_db

NOW = dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.timezone.utc)


def _request(consumer: str, **fields):
    serializer = SubscribeSerializer(data=subscription_body(**fields))
    serializer.is_valid(raise_exception=True)
    return parse_subscribe_request(serializer.validated_data, requester=consumer)


def _write(consumer: str, request, trigger: bool = False):
    return subscribing.subscription_upsert(requester=consumer, subscribe=request,
                                           trigger=trigger)


def _stored(subscription_id) -> dict:
    row = model_to_dict(Subscription.objects.get(id=subscription_id))
    return {name: value for name, value in row.items()
            if name not in ("id", "owner", "target", "identity_key")}


BODY = {"duration": 300, "orchestrationRequest": {
    "serviceRequirement": {"serviceDefinition": "temperatureInfo",
                           "metadataRequirements": [{"unit": "celsius"}],
                           "interfaceTemplateNames": ["generic_http"]},
    "orchestrationFlags": {"MATCHMAKING": True}, "qualityRequirements": {"maxLatency": 5}},
    "notifyInterface": HTTP_NOTIFY}
MQTT_BODY = {**BODY, "notifyInterface": mqtt_notify("plant/a")}


class SubscriptionUpsertTests:
    def test_a_new_subscription_is_stored_flagged_from_its_baseline(self, monkeypatch):
        monkeypatch.setattr(timezone, "now", lambda: NOW)
        monkeypatch.setattr(subscribing, "subscription_baseline", lambda *a: "b" * 64)
        subscription_id, created = _write("UpsertConsumer", _request("UpsertConsumer", **BODY))
        assert created is True
        stored = Subscription.objects.get(id=subscription_id)
        assert (stored.owner, stored.target, stored.service_definition, stored.identity_key) \
            == ("UpsertConsumer", "UpsertConsumer", "temperatureInfo",
                "UpsertConsumer|UpsertConsumer|temperatureInfo")
        assert stored.notify_protocol == "HTTP"
        assert (stored.duration, stored.expires_at) == (300, NOW + dt.timedelta(seconds=300))
        assert (stored.last_fingerprint, is_flagged(stored), stored.last_pushed_at) == (
            "b" * 64, True, None)
        assert (stored.created_at, stored.updated_at) == (NOW, NOW)

    def test_what_the_upsert_returns_is_the_stored_row(self):
        """Created or overwritten, each returned subscription is the row as stored (written
        by a plain statement, not `save()`): saving it again updates that row."""
        [(created, was_created)] = subscribing.subscriptions_upsert(
            owner="UpsertConsumer", subscribes=[_request("UpsertConsumer", **BODY)])
        [(overwritten, was_created_again)] = subscribing.subscriptions_upsert(
            owner="UpsertConsumer", subscribes=[_request("UpsertConsumer", **BODY)])
        assert (was_created, was_created_again) == (True, False)
        assert overwritten.id == created.id
        assert overwritten.created_at == Subscription.objects.get(id=created.id).created_at
        for subscription, duration in ((created, 11), (overwritten, 12)):
            subscription.duration = duration
            subscription.save()
            assert Subscription.objects.get().duration == duration

    def test_the_same_notify_interface_is_overwritten_in_place(self, monkeypatch):
        first_id, _ = _write("UpsertConsumer", _request("UpsertConsumer", **BODY))
        Subscription.objects.filter(id=first_id).update(last_fingerprint="f" * 64)
        flags_clear_all()
        pending = NotificationDelivery.objects.create(
            subscription_id=first_id, protocol="HTTP", properties=HTTP_NOTIFY["properties"],
            receiver="UpsertConsumer", payload={}, status=NotificationDelivery.Status.PENDING)
        later = NOW + dt.timedelta(minutes=5)
        monkeypatch.setattr(timezone, "now", lambda: later)
        monkeypatch.setattr(subscribing, "subscription_baseline", lambda *a: "b" * 64)
        changed = {**BODY, "duration": None,
                   "orchestrationRequest": {"serviceRequirement": {
                       "serviceDefinition": "temperatureInfo"}}}
        second_id, created = _write("UpsertConsumer", _request("UpsertConsumer", **changed))
        assert (second_id, created) == (first_id, False)
        stored = Subscription.objects.get(id=first_id)
        assert stored.orchestration_request == changed["orchestrationRequest"]
        assert (stored.duration, stored.expires_at) == (None, None)
        # The new request's result as it is now; what changes after it is pushed.
        assert stored.last_fingerprint == "b" * 64
        assert is_flagged(stored)
        assert stored.updated_at == later
        pending.refresh_from_db()
        assert pending.status == NotificationDelivery.Status.PENDING  # same interface

    def test_a_changed_notify_interface_cancels_the_pending_notification(self):
        first_id, _ = _write("UpsertConsumer", _request("UpsertConsumer", **BODY))
        pending = NotificationDelivery.objects.create(
            subscription_id=first_id, protocol="HTTP", properties=HTTP_NOTIFY["properties"],
            receiver="UpsertConsumer", payload={}, status=NotificationDelivery.Status.PENDING)
        subscription_id, created = _write("UpsertConsumer",
                                          _request("UpsertConsumer", **MQTT_BODY))
        assert (subscription_id, created) == (first_id, False)
        pending.refresh_from_db()
        assert pending.status == NotificationDelivery.Status.CANCELLED
        assert pending.last_error == "The subscription's notify interface changed"
        assert Subscription.objects.get(id=first_id).notify_protocol == "MQTT"

    def test_an_mqtt_subscription_on_the_same_topic_is_overwritten_in_place(self):
        first_id, _ = _write("UpsertConsumer", _request("UpsertConsumer", **MQTT_BODY))
        again = {**MQTT_BODY, "duration": 7}
        assert _write("UpsertConsumer", _request("UpsertConsumer", **again)) == (
            first_id, False)
        assert Subscription.objects.get(id=first_id).duration == 7

    def test_a_target_without_room_is_refused_but_its_subscriptions_overwritten(self, settings):
        settings.MAX_SUBSCRIPTIONS_PER_SYSTEM = 2
        for definition in ("first", "second"):
            _, created = _write("UpsertConsumer", _request(
                "UpsertConsumer", **{**BODY, "orchestrationRequest": {
                    "serviceRequirement": {"serviceDefinition": definition}}}))
            assert created is True
        with pytest.raises(InvalidParameter, match="Too many subscriptions: UpsertConsumer "
                                                   r"already has 2 \(at most 2\)"):
            _write("UpsertConsumer", _request("UpsertConsumer", **BODY))
        assert Subscription.objects.filter(target="UpsertConsumer").count() == 2
        again = {**BODY, "orchestrationRequest": {
            "serviceRequirement": {"serviceDefinition": "first"}}, "duration": 7}
        _, created = _write("UpsertConsumer", _request("UpsertConsumer", **again))
        assert created is False
        assert Subscription.objects.get(service_definition="first").duration == 7

    def test_other_targets_do_not_count_against_the_limit(self, settings):
        settings.MAX_SUBSCRIPTIONS_PER_SYSTEM = 1
        _write("OtherConsumer", _request("OtherConsumer", **BODY))
        _, created = _write("UpsertConsumer", _request("UpsertConsumer", **BODY))
        assert created is True

    def test_trigger_pushes_in_the_same_call_without_a_baseline(self, monkeypatch):
        pushed = []
        monkeypatch.setattr(subscribing, "subscription_baseline",
                            lambda *a: pytest.fail("trigger records what it pushes"))
        monkeypatch.setattr(subscribing, "subscription_push_queue",
                            lambda subscription, **k: pushed.append(subscription.id))
        subscription_id, created = _write("UpsertConsumer",
                                          _request("UpsertConsumer", **BODY), trigger=True)
        assert created is True and pushed == [subscription_id]


@pytest.mark.django_db(transaction=True)
class TransactionTests:
    def test_inside_a_transaction_the_upsert_is_part_of_it(self):
        with pytest.raises(RuntimeError), transaction.atomic():
            _write("UpsertConsumer", _request("UpsertConsumer", **BODY))
            raise RuntimeError("roll back")
        assert not Subscription.objects.exists()

    def test_outside_a_transaction_the_upsert_commits(self):
        subscription_id, created = _write("UpsertConsumer", _request("UpsertConsumer", **BODY))
        assert created is True
        connection.close()  # a new session sees it
        assert Subscription.objects.filter(id=subscription_id).exists()
