"""Rows written by COPY (database.bulk_insert) read back as the ORM would have written them,
whether a value skips its field's preparation (a native value) or not."""
import datetime as dt
import uuid

import pytest
from django.db import connection
from django.utils import timezone
from django.utils.functional import lazy

from conventions.encoded_json import encoded, encoded_object
from database.bulk_insert import _preparer, model_rows_insert, new_ids, rows_insert
from notifications.models import NotificationDelivery
from orchestration.models import OrchestrationJob

COLUMNS = ("id", "type", "status", "requester", "target", "service_definition",
           "subscription_id", "result_count", "message", "created_at", "started_at",
           "finished_at")


def job_row(requester, result_count, subscription_id, message) -> tuple:
    now = timezone.now()
    return (uuid.uuid4(), OrchestrationJob.Type.PUSH, "DONE", requester, "Target", "svc",
            subscription_id, result_count, message, now, now, now)


@pytest.mark.django_db
def test_native_and_other_values_are_written_as_the_fields_prepare_them():
    subscription = uuid.uuid4()
    lazy_name = lazy(lambda: "LazyRequester", str)()
    rows = [job_row("Requester", 3, subscription, "plain"),
            # Not of the native types: prepared by their fields (a lazy string, a
            # number for a text column, a UUID's text, a count given as a bool).
            job_row(lazy_name, True, str(subscription), 7),
            job_row("Nobody", 0, None, "")]
    rows_insert(OrchestrationJob, COLUMNS, rows)
    written = {job.id: job for job in OrchestrationJob.objects.filter(
        id__in=[row[0] for row in rows])}
    first, second, third = (written[row[0]] for row in rows)
    assert (first.type, first.requester, first.result_count, first.subscription_id,
            first.message) == ("PUSH", "Requester", 3, subscription, "plain")
    assert (second.requester, second.result_count, second.subscription_id,
            second.message) == ("LazyRequester", 1, subscription, "7")
    assert third.subscription_id is None and third.result_count == 0
    assert abs(first.created_at - timezone.now()) < dt.timedelta(minutes=1)


@pytest.mark.django_db
def test_only_values_a_field_gives_back_unchanged_skip_its_preparation():
    fields = {field.name: field for field in OrchestrationJob._meta.concrete_fields}
    count = _preparer(fields["result_count"], connection)
    assert count(5) == 5 and count(True) == 1  # bool is prepared into an int
    text = _preparer(fields["message"], connection)
    assert text("x") == "x" and text(7) == "7"


def test_new_ids_are_distinct_version_4_uuids():
    ids = new_ids(1000)
    assert len(set(ids)) == 1000 and new_ids(0) == []
    assert {(value.version, value.variant) for value in ids} == {(4, uuid.RFC_4122)}


@pytest.mark.django_db
def test_a_json_value_that_knows_its_encoding_is_written_as_that_text():
    payload = encoded_object([("receiver", "Consümer"),
                              ("payload", encoded({"results": [{"n": 1.5, "s": "a\nb"}]}))])
    field = NotificationDelivery._meta.get_field("payload")
    assert _preparer(field, connection)(payload) == payload.text
    now = timezone.now()
    delivery = NotificationDelivery(
        id=uuid.uuid4(), subscription_id=uuid.uuid4(), receiver="Consümer", protocol="MQTT",
        properties={"topic": "t"}, payload=payload, expires_at=None, status="PENDING",
        attempts=0, last_error="", next_attempt_at=now, claimed_at=None, heartbeat_at=None,
        destination="", created_at=now, updated_at=now, delivered_at=None)
    model_rows_insert([delivery])
    assert NotificationDelivery.objects.get(pk=delivery.pk).payload == {
        "receiver": "Consümer", "payload": {"results": [{"n": 1.5, "s": "a\nb"}]}}
