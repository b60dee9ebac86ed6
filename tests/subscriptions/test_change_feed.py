"""The subscriptions read the change feed the database writes (orchestration/snapshot/changes.py)
through their stored cursor (subscriptions/services/evaluation.py `changes_flag`): the changes
after it flag the subscriptions of the consumers concerned; what the cursor cannot vouch for
flags every live one."""
import datetime as dt
import threading

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from orchestration.snapshot.changes import TRUSTED_SECONDS
from subscriptions.models import FeedCursor, Subscription
from subscriptions.services import evaluation
from tests.concurrency import Background, hold_first_caller, second_writer_waits, wait_until
from tests.factories import make_instances, make_rules, make_subscription
from tests.store.helpers import instance_body
from tests.subscriptions.helpers import (
    feed_skip,
    feed_unread,
    flagged_subscriptions,
    flags_clear_all,
    mqtt_notify,
    subscription_body,
)

A, B = "ProviderA|temperatureInfo|1.0.0", "ProviderB|temperatureInfo|1.0.0"


def subscribed(api, *consumers: str) -> None:
    for consumer in consumers:
        make_subscription(api, subscription_body(notify=mqtt_notify(f"t/{consumer}")), consumer)


def flagged() -> set[str]:
    return set(flagged_subscriptions().values_list("target",
                                                                              flat=True))


@pytest.fixture
def consumers(api):
    """Car1 with a rule to A, Car2 with a rule to B, both subscribed; Gone's subscription
    expired. The cursor is past the setup's changes."""
    make_instances(instance_body("ProviderA"), instance_body("ProviderB"))
    make_rules(("Car1", A, 1), ("Car2", B, 1))
    subscribed(api, "Car1", "Car2", "Gone")
    Subscription.objects.filter(target="Gone").update(
        expires_at=timezone.now() - dt.timedelta(seconds=1))
    flags_clear_all()  # as if evaluated
    feed_skip()


@pytest.mark.django_db
class CursorTests:
    def test_it_flags_the_consumers_whose_rules_changed(self, consumers):
        make_rules(("Car2", A, 2))
        evaluation.changes_flag()
        assert flagged() == {"Car2"}
        assert not feed_unread()

    def test_an_instance_change_flags_the_consumers_whose_rules_point_at_it(self, consumers):
        make_instances(instance_body("ProviderA", metadata={"v": 2}))
        evaluation.changes_flag()
        assert flagged() == {"Car1"}

    def test_a_round_without_changes_flags_nothing_and_locks_nothing(self, consumers):
        evaluation.changes_flag()  # the cursor read just now
        with CaptureQueriesContext(connection) as queries:
            evaluation.changes_flag()
        assert flagged() == set()
        assert not any("FOR UPDATE" in query["sql"] for query in queries)

    def test_a_truncate_flags_every_live_subscription(self, consumers):
        with connection.cursor() as cursor:
            cursor.execute("TRUNCATE orchestration_orchestrationlock")
        evaluation.changes_flag()
        assert flagged() == {"Car1", "Car2"}

    def test_a_cursor_behind_the_pruning_flags_every_live_subscription(self, consumers):
        FeedCursor.objects.update(
            read_at=timezone.now() - dt.timedelta(seconds=TRUSTED_SECONDS + 1))
        evaluation.changes_flag()
        assert flagged() == {"Car1", "Car2"}
        flags_clear_all()
        evaluation.changes_flag()  # read just now: trusted again
        assert flagged() == set()

    def test_a_cursor_never_read_flags_every_live_subscription(self, consumers):
        FeedCursor.objects.all().delete()
        evaluation.changes_flag()
        assert flagged() == {"Car1", "Car2"}
        assert not feed_unread()

    def test_more_changes_than_one_read_flags_every_live_subscription(self, consumers,
                                                                       monkeypatch):
        monkeypatch.setattr(evaluation, "FEED_READ_LIMIT", 1)
        make_rules(("Car1", B, 2), ("Other", A, 1))
        evaluation.changes_flag()
        assert flagged() == {"Car1", "Car2"}
        assert not feed_unread()


@pytest.mark.django_db(transaction=True)
class ConcurrentCursorTests:
    def test_a_change_committed_after_a_later_one_is_not_missed(self, consumers):
        # Car1's rule is written (a lower feed id) by a transaction that commits after a round
        # has read Car2's later change: the cursor remembers it as running.
        written, commit = threading.Event(), threading.Event()

        def slow_writer() -> None:
            with transaction.atomic():
                make_rules(("Car1", B, 2))
                written.set()
                commit.wait(timeout=30)

        writer = Background(slow_writer)
        assert written.wait(timeout=30)
        make_rules(("Car2", A, 2))
        evaluation.changes_flag()
        assert flagged() == {"Car2"}
        commit.set()
        assert writer.outcome() is None
        flags_clear_all()
        evaluation.changes_flag()
        assert flagged() == {"Car1"}
        assert not feed_unread()

    def test_a_second_round_waits_for_the_cursor(self, consumers, monkeypatch):
        entered, release, first_waiting = hold_first_caller(monkeypatch, evaluation,
                                                            "changes_since")
        make_rules(("Car2", A, 2))
        outcomes = second_writer_waits(evaluation._changes_flag_locked,
                                       evaluation._changes_flag_locked,
                                       entered, release, first_waiting)
        assert outcomes["first"] is False and outcomes["second"] is False  # not everything
        assert not outcomes["second reached the write while the first held it"]
        assert flagged() == {"Car2"}
        assert wait_until(lambda: not feed_unread(), timeout=1)
