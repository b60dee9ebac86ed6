"""The one-statement subscribe (subscriptions/subscribe_statement.py): what it writes is what
the general path writes, and every case it must not decide alone is left to the general
path (it answers None and writes nothing)."""
import datetime as dt

import pytest
from django.forms.models import model_to_dict
from django.db import connection, transaction
from django.utils import timezone

from notifications.models import NotificationDelivery
from subscriptions.services import subscribing
from subscriptions.models import Subscription, identity_key
from subscriptions.requests import parse_subscribe_request
from subscriptions.serializers import SubscribeSerializer
from subscriptions.subscribe_statement import subscription_write_at_once
from tests.subscriptions.helpers import HTTP_NOTIFY, mqtt_notify, subscription_body

pytestmark = pytest.mark.django_db

NOW = dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.timezone.utc)


def _request(consumer: str, **fields):
    serializer = SubscribeSerializer(data=subscription_body(**fields))
    serializer.is_valid(raise_exception=True)
    return parse_subscribe_request(serializer.validated_data, requester=consumer)


def _write(consumer: str, request, now: dt.datetime = NOW, baseline: str | None = None):
    """The statement's write, from the subscription's baseline (read now, unless given)."""
    expires = now + dt.timedelta(seconds=request.duration) if request.duration else None
    return subscription_write_at_once(
        owner=consumer, subscribe=request,
        key=identity_key(consumer, request.target, request.service_definition),
        expires_at=expires, now=now,
        baseline=subscribing.subscription_baseline(request, now) if baseline is None else baseline)


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


class OneStatementSubscribeTests:
    def test_a_new_subscription_is_stored_as_the_general_path_stores_it(self, monkeypatch):
        monkeypatch.setattr(timezone, "now", lambda: NOW)
        request = _request("StatementConsumer", **BODY)
        subscription_id, created = _write("StatementConsumer", request)
        assert created is True
        [(general, general_created)] = subscribing.subscriptions_upsert(
            owner="GeneralConsumer", subscribes=[_request("GeneralConsumer", **BODY)])
        assert general_created is True
        stored = Subscription.objects.get(id=subscription_id)
        assert (stored.owner, stored.target, stored.service_definition, stored.identity_key) \
            == ("StatementConsumer", "StatementConsumer", "temperatureInfo",
                "StatementConsumer|StatementConsumer|temperatureInfo")
        assert stored.expires_at == NOW + dt.timedelta(seconds=300)
        assert _stored(subscription_id) == _stored(general.id)

    def test_the_same_notify_interface_is_overwritten_in_place(self):
        first_id, _ = _write("StatementConsumer", _request("StatementConsumer", **BODY))
        Subscription.objects.filter(id=first_id).update(last_fingerprint="f" * 64,
                                                        needs_evaluation=False)
        later = NOW + dt.timedelta(minutes=5)
        changed = {**BODY, "duration": None,
                   "orchestrationRequest": {"serviceRequirement": {
                       "serviceDefinition": "temperatureInfo"}}}
        second_id, created = _write("StatementConsumer", _request("StatementConsumer",
                                                                  **changed),
                                    now=later, baseline="b" * 64)
        assert (second_id, created) == (first_id, False)
        stored = Subscription.objects.get(id=first_id)
        assert stored.orchestration_request == changed["orchestrationRequest"]
        assert (stored.duration, stored.expires_at) == (None, None)
        # The new request's result as it is now; what changes after it is pushed.
        assert stored.last_fingerprint == "b" * 64
        assert stored.needs_evaluation is True
        assert (stored.created_at, stored.updated_at) == (NOW, later)

    def test_a_changed_notify_interface_is_left_to_the_general_path(self):
        first_id, _ = _write("StatementConsumer", _request("StatementConsumer", **BODY))
        before = _stored(first_id)
        moved = {**BODY, "duration": 50, "notifyInterface": mqtt_notify("plant/b")}
        assert _write("StatementConsumer", _request("StatementConsumer", **moved)) is None
        assert _stored(first_id) == before

    def test_the_general_path_cancels_the_pending_notification_of_a_changed_interface(self):
        first_id, _ = _write("StatementConsumer", _request("StatementConsumer", **BODY))
        pending = NotificationDelivery.objects.create(
            subscription_id=first_id, protocol="HTTP", properties=HTTP_NOTIFY["properties"],
            receiver="StatementConsumer", payload={}, status=NotificationDelivery.Status.PENDING)
        moved = MQTT_BODY
        subscription_id, created = subscribing.subscription_upsert(
            requester="StatementConsumer", subscribe=_request("StatementConsumer", **moved),
            trigger=False)
        assert (subscription_id, created) == (first_id, False)
        pending.refresh_from_db()
        assert pending.status == NotificationDelivery.Status.CANCELLED
        assert Subscription.objects.get(id=first_id).notify_protocol == "MQTT"

    def test_a_new_mqtt_subscription_is_left_to_the_general_path(self):
        """Its topic has to be claimed for its target under the topic's lock, which the
        statement's snapshot, taken before any lock, cannot see (subscriptions/
        notify_topics.py)."""
        assert _write("StatementConsumer", _request("StatementConsumer", **MQTT_BODY)) is None
        assert not Subscription.objects.exists()

    def test_an_mqtt_subscription_on_the_same_topic_is_overwritten_in_place(self):
        [(first, _)] = subscribing.subscriptions_upsert(
            owner="StatementConsumer", subscribes=[_request("StatementConsumer", **MQTT_BODY)])
        again = {**MQTT_BODY, "duration": 7}
        assert _write("StatementConsumer", _request("StatementConsumer", **again)) == (
            first.id, False)
        assert Subscription.objects.get(id=first.id).duration == 7

    def test_a_target_without_room_is_left_to_the_general_path(self, settings):
        settings.MAX_SUBSCRIPTIONS_PER_SYSTEM = 2
        for definition in ("first", "second"):
            _, created = _write("StatementConsumer", _request(
                "StatementConsumer", **{**BODY, "orchestrationRequest": {
                    "serviceRequirement": {"serviceDefinition": definition}}}))
            assert created is True
        assert _write("StatementConsumer", _request("StatementConsumer", **BODY)) is None
        assert Subscription.objects.filter(target="StatementConsumer").count() == 2
        # An existing subscription of a full target is still overwritten.
        again = {**BODY, "orchestrationRequest": {
            "serviceRequirement": {"serviceDefinition": "first"}}, "duration": 7}
        _, created = _write("StatementConsumer", _request("StatementConsumer", **again))
        assert created is False
        assert Subscription.objects.get(service_definition="first").duration == 7

    def test_one_below_the_limit_there_is_room_for_one_more(self, settings):
        settings.MAX_SUBSCRIPTIONS_PER_SYSTEM = 2
        _write("StatementConsumer", _request("StatementConsumer", **{
            **BODY, "orchestrationRequest": {"serviceRequirement": {
                "serviceDefinition": "first"}}}))
        _, created = _write("StatementConsumer", _request("StatementConsumer", **BODY))
        assert created is True

    def test_other_targets_do_not_count_against_the_limit(self, settings):
        settings.MAX_SUBSCRIPTIONS_PER_SYSTEM = 1
        _write("OtherConsumer", _request("OtherConsumer", **BODY))
        _, created = _write("StatementConsumer", _request("StatementConsumer", **BODY))
        assert created is True

    def test_trigger_takes_the_general_path(self, monkeypatch):
        calls = []
        monkeypatch.setattr(subscribing, "subscription_write_at_once",
                            lambda **kwargs: calls.append(kwargs))
        monkeypatch.setattr(subscribing, "subscription_push_queue", lambda *a, **k: None)
        _, created = subscribing.subscription_upsert(
            requester="StatementConsumer", subscribe=_request("StatementConsumer", **BODY),
            trigger=True)
        assert created is True and calls == []


@pytest.mark.django_db(transaction=True)
class TransactionTests:
    def test_inside_a_transaction_the_statement_is_part_of_it(self):
        """The statement runs on libpq directly; as the first statement of a transaction it
        must begin the transaction as the driver would, or it commits alone."""
        with pytest.raises(RuntimeError), transaction.atomic():
            _write("StatementConsumer", _request("StatementConsumer", **BODY))
            raise RuntimeError("roll back")
        assert not Subscription.objects.exists()

    def test_outside_a_transaction_the_statement_commits_alone(self):
        subscription_id, created = _write("StatementConsumer",
                                          _request("StatementConsumer", **BODY))
        assert created is True
        connection.close()  # a new session sees it
        assert Subscription.objects.filter(id=subscription_id).exists()
