"""Outbox retention (notifications/retention.py): finished deliveries older than
NOTIFICATION_MAX_AGE_DAYS go, work still to do stays; and the subscription indexes that keep
a push's own queries from reading the subscription's history."""
import datetime as dt
import re
import uuid

import pytest
from django.db import connection
from django.utils import timezone

from config.settings import CELERY_BEAT_SCHEDULE
from notifications.models import NotificationDelivery
from notifications.retention import deliveries_remove_old
from notifications.selectors import (
    deliveries_neighbours,
    deliveries_newer,
    deliveries_pending,
)
from notifications.tasks import remove_old_deliveries_task
from tests.startup import assert_start_refused

pytestmark = pytest.mark.django_db

Status = NotificationDelivery.Status
NOW = dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.timezone.utc)


def delivery(days_ago: float, status: str = Status.DELIVERED, **fields) -> NotificationDelivery:
    """A delivery created `days_ago` days before NOW."""
    created = NOW - dt.timedelta(days=days_ago)
    return NotificationDelivery.objects.create(**{
        "subscription_id": uuid.uuid4(), "protocol": "MQTT", "properties": {"topic": "t"},
        "payload": {}, "status": status, "created_at": created, "updated_at": created,
        **fields})


def remaining() -> set:
    return set(NotificationDelivery.objects.values_list("id", flat=True))


class DeliveryRetentionTests:
    def test_it_removes_old_finished_deliveries_and_keeps_recent_ones(self, settings):
        settings.NOTIFICATION_MAX_AGE_DAYS = 15
        old = [delivery(16), delivery(15.01, Status.FAILED), delivery(40, Status.CANCELLED)]
        recent = [delivery(14.99), delivery(1, Status.FAILED), delivery(0, Status.CANCELLED)]
        assert deliveries_remove_old(now=NOW) == len(old)
        assert remaining() == {d.id for d in recent}

    def test_it_never_removes_work_still_to_do(self, settings):
        settings.NOTIFICATION_MAX_AGE_DAYS = 1
        kept = [delivery(365, Status.PENDING), delivery(365, Status.SENDING,
                                                         claimed_at=NOW - dt.timedelta(days=365))]
        assert deliveries_remove_old(now=NOW) == 0
        assert remaining() == {d.id for d in kept}

    def test_zero_days_keeps_every_delivery(self, settings):
        settings.NOTIFICATION_MAX_AGE_DAYS = 0
        kept = [delivery(10_000), delivery(400, Status.FAILED)]
        assert deliveries_remove_old(now=NOW) == 0
        assert remaining() == {d.id for d in kept}

    def test_it_removes_in_batches_the_oldest_first(self, settings):
        settings.NOTIFICATION_MAX_AGE_DAYS = 15
        olds = [delivery(20 + n) for n in range(5)]
        keep = delivery(2)
        assert deliveries_remove_old(now=NOW, batch_size=2, max_batches=2) == 4
        assert remaining() == {olds[0].id, keep.id}  # the newest of the old ones is left
        assert deliveries_remove_old(now=NOW, batch_size=2, max_batches=2) == 1
        assert remaining() == {keep.id}

    def test_the_periodic_task_uses_the_setting(self, settings):
        settings.NOTIFICATION_MAX_AGE_DAYS = 15
        recent = NotificationDelivery.objects.create(
            subscription_id=uuid.uuid4(), protocol="MQTT", properties={}, payload={},
            status=Status.DELIVERED, created_at=timezone.now() - dt.timedelta(days=14))
        NotificationDelivery.objects.create(
            subscription_id=uuid.uuid4(), protocol="MQTT", properties={}, payload={},
            status=Status.DELIVERED, created_at=timezone.now() - dt.timedelta(days=16))
        assert remove_old_deliveries_task.delay().get() == 1
        assert remaining() == {recent.id}
        entry = CELERY_BEAT_SCHEDULE["remove-old-deliveries"]
        assert entry["task"] == remove_old_deliveries_task.name \
            == "notifications.remove_old_deliveries"


class SubscriptionIndexTests:
    """A push supersedes the subscription's pending delivery; a send asks whether a newer
    one exists and whether an older one is being sent (alone, or for a batch at once). The
    code's own queries (notifications/selectors.py) must read only the rows they look for,
    with a long history (here 2000 finished deliveries of the subscription, 10 000 of 500
    others) and a fan-out's backlog (2000 other subscriptions' pending deliveries, 300 more
    being sent)."""

    @pytest.fixture
    def history(self):
        subscription_id = uuid.uuid4()

        def row(subscription, minutes_ago, status=Status.DELIVERED):
            return NotificationDelivery(subscription_id=subscription, protocol="MQTT",
                                        properties={}, payload={}, status=status,
                                        created_at=NOW - dt.timedelta(minutes=minutes_ago))

        others = [uuid.uuid4() for _ in range(500)]
        NotificationDelivery.objects.bulk_create(
            [row(subscription_id, n) for n in range(1, 2001)]  # its history
            + [row(other, 60 * n) for other in others for n in range(1, 21)]  # theirs
            + [row(uuid.uuid4(), n / 1000, Status.PENDING)  # a fan-out's backlog
               for n in range(2000)]
            + [row(uuid.uuid4(), n / 1000, Status.SENDING)  # and what is being sent of it
               for n in range(300)])
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE notifications_notificationdelivery")
            # A table this small is read whole at once; a plant's is not.
            cursor.execute("SET LOCAL enable_seqscan = off")
        return subscription_id

    def plan(self, queryset) -> str:
        return queryset.explain(analyze=True)

    def rows_read(self, plan: str) -> int:
        """The rows the plan's index and table scans returned and those their filters
        removed, summed (a bitmap's heap scan returns its index scan's rows again)."""
        returned = re.findall(r"(?:Index Scan|Index Only Scan|Seq Scan)[^\n]*?"
                              r"actual time=\S+ rows=(\d+)", plan)
        removed = re.findall(r"Rows Removed by Filter: (\d+)", plan)
        return sum(int(n) for n in returned + removed)

    def probe(self, subscription_id, minutes_ago: float) -> NotificationDelivery:
        """A delivery of the subscription created `minutes_ago` (not stored: its queries
        are asked about)."""
        return NotificationDelivery(id=uuid.uuid4(), subscription_id=subscription_id,
                                    created_at=NOW - dt.timedelta(minutes=minutes_ago))

    def test_superseding_the_pending_one_reads_only_the_unfinished(self, history):
        plan = self.plan(deliveries_pending(subscription_ids=[history]))
        assert self.rows_read(plan) == 0, plan

    def test_the_newer_check_reads_only_what_is_newer(self, history):
        plan = self.plan(deliveries_newer(self.probe(history, 3)))
        assert self.rows_read(plan) == 2, plan

    def test_a_batch_send_reads_only_what_it_asks_about(self, history):
        claimed = self.probe(history, 3)
        claimed.__dict__.update(protocol="MQTT", properties={}, payload={},
                                status=Status.SENDING, claimed_at=timezone.now())
        claimed.save()
        plan = self.plan(deliveries_neighbours([claimed.id], claimed.claimed_at))
        # the claimed row; one newer row (EXISTS stops there); its older ones being sent,
        # through their own index: none
        assert self.rows_read(plan) == 2, plan


@pytest.mark.parametrize("value", ["-1", "soon"])
def test_an_invalid_max_age_stops_the_start(value):
    assert_start_refused("NOTIFICATION_MAX_AGE_DAYS", NOTIFICATION_MAX_AGE_DAYS=value)
