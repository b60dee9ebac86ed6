"""`AnyOf` (database/expressions.py) selects the rows `field__in` selects, with one
parameter on PostgreSQL and as an IN elsewhere."""
import uuid

import pytest
from django.db import connection
from django.db.backends.sqlite3.base import DatabaseWrapper as SQLiteWrapper
from django.utils import timezone

from database.expressions import AnyOf
from orchestration.models import OrchestrationJob
from subscriptions.models import EvaluationFlag, Subscription


def _subscription(number: int) -> Subscription:
    return Subscription.objects.create(
        owner="Owner", target=f"Consumer{number}", identity_key=f"key-{number}",
        orchestration_request={}, notify_protocol="MQTT",
        notify_properties={"topic": f"t/{number}"}, created_at=timezone.now(),
        updated_at=timezone.now())


def _ids(queryset) -> set:
    return set(queryset.values_list("pk", flat=True))


@pytest.mark.django_db
def test_it_selects_what_in_selects_for_a_key_a_foreign_key_and_text_values():
    subscriptions = [_subscription(number) for number in range(5)]
    for subscription in subscriptions[:3]:
        EvaluationFlag.objects.create(subscription=subscription)
    chosen = [subscriptions[0].pk, subscriptions[2].pk, subscriptions[4].pk, uuid.uuid4()]
    assert (_ids(Subscription.objects.filter(AnyOf("pk", chosen)))
            == _ids(Subscription.objects.filter(pk__in=chosen))
            == {subscriptions[0].pk, subscriptions[2].pk, subscriptions[4].pk})
    # the flag's key is a one-to-one field to the subscription; values given as text
    as_text = [str(value) for value in chosen]
    assert (_ids(EvaluationFlag.objects.filter(AnyOf("pk", as_text)))
            == _ids(EvaluationFlag.objects.filter(pk__in=as_text))
            == {subscriptions[0].pk, subscriptions[2].pk})
    assert (_ids(Subscription.objects.exclude(AnyOf("pk", chosen)))
            == {subscriptions[1].pk, subscriptions[3].pk})


@pytest.mark.django_db
def test_no_values_select_no_row_and_exclude_none():
    _subscription(1)
    assert not Subscription.objects.filter(AnyOf("pk", [])).exists()
    assert Subscription.objects.exclude(AnyOf("pk", [])).count() == 1


@pytest.mark.django_db
def test_updates_and_deletes_take_it():
    subscriptions = [_subscription(number) for number in range(3)]
    for subscription in subscriptions:
        EvaluationFlag.objects.create(subscription=subscription)
    chosen = [subscriptions[0].pk, subscriptions[1].pk]
    assert Subscription.objects.filter(AnyOf("pk", chosen)).update(last_fingerprint="x") == 2
    assert set(Subscription.objects.filter(last_fingerprint="x")
               .values_list("pk", flat=True)) == set(chosen)
    EvaluationFlag.objects.filter(AnyOf("pk", chosen)).delete()
    assert _ids(EvaluationFlag.objects.all()) == {subscriptions[2].pk}


@pytest.mark.django_db
def test_on_postgresql_the_values_are_one_array_parameter():
    values = [uuid.uuid4() for _ in range(500)]
    sql, params = (OrchestrationJob.objects.filter(AnyOf("subscription_id", values))
                   .query.get_compiler(connection=connection).as_sql())
    assert '"subscription_id" = ANY(%s::uuid[])' in sql
    assert list(params) == [values]


def test_elsewhere_it_is_an_in_with_the_values_as_the_field_prepares_them():
    sqlite = SQLiteWrapper({"NAME": ":memory:", "ENGINE": "django.db.backends.sqlite3",
                            "OPTIONS": {}, "TIME_ZONE": None, "CONN_MAX_AGE": 0,
                            "CONN_HEALTH_CHECKS": False, "AUTOCOMMIT": True,
                            "ATOMIC_REQUESTS": False, "USER": "", "PASSWORD": "",
                            "HOST": "", "PORT": "", "TEST": {}}, alias="sqlite-compile")
    values = [uuid.uuid4(), uuid.uuid4()]
    sql, params = (Subscription.objects.filter(AnyOf("pk", values))
                   .query.get_compiler(connection=sqlite).as_sql())
    assert '"id" IN (%s, %s)' in sql
    assert list(params) == [value.hex for value in values]  # SQLite keeps UUIDs as hex text
