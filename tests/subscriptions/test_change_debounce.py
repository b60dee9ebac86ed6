"""Change processing flags at once and evaluates once a burst of changes has ended (issue 34):
the task flags the subscriptions a change concerns when it runs (at the commit), evaluates the
flagged ones once no change has come for SUBSCRIPTION_QUIET_SECONDS, never later than
SUBSCRIPTION_MAX_DELAY_SECONDS after the burst began (its oldest change), evaluates a burst
once, and asks for itself again while the burst goes on. The feed's `written_at` and the
cursor's `pending_since` are moved back in time instead of waiting."""
import datetime as dt

import pytest
from django.db.models import F

from notifications.models import NotificationDelivery
from orchestration.models import SnapshotChange
from store.services import nudge
from subscriptions.models import FeedCursor, Subscription
from subscriptions.services.evaluation import (
    Settling,
    burst_take,
    changes_process,
    flags_settling,
)
from subscriptions.tasks import process_changes_task
from tests.factories import make_instances, make_rules
from tests.startup import assert_start_refused, started
from tests.store.helpers import instance_body
from tests.subscriptions.helpers import (
    feed_skip,
    feed_unread,
    flags_set_all,
    is_flagged,
    mqtt_notify,
    subscribe,
    subscription_body,
)

pytestmark = pytest.mark.django_db

A = "ProviderA|temperatureInfo|1.0.0"


def provider(number: int) -> str:
    return f"Provider{number}|temperatureInfo|1.0.0"


def written_ago(seconds: float, **filters) -> None:
    SnapshotChange.objects.filter(**filters).update(
        written_at=F("written_at") - dt.timedelta(seconds=seconds))


def pending_since_ago(seconds: float) -> None:
    FeedCursor.objects.update(pending_since=F("pending_since") - dt.timedelta(seconds=seconds))


class FlagsSettlingTests:
    def test_flags_outside_a_burst_neither_wait_nor_start_one(self, subscription):
        """A subscribe's flag, or an expired subscription's left until its removal, is
        evaluated as soon as no change is young; it gives no burst a beginning."""
        written_ago(61)  # the setup's own changes
        flags_set_all()
        assert flags_settling() == Settling(0.0, None, True)
        make_rules(("Consumer", A, 1))  # a young change, not flagged by a round
        assert 59 < flags_settling().wait <= 60

    def test_nothing_flagged_and_nothing_changed_has_nothing_to_wait_for(self, subscription):
        SnapshotChange.objects.all().delete()
        assert flags_settling() == Settling(0.0, None, False)

    def test_a_change_younger_than_the_quiet_period_is_a_burst_going_on(self, subscription,
                                                                          asked_again):
        make_rules(("TemperatureConsumer", provider(2), 2))
        assert process_changes_task() == 0  # flagged; the burst begins with the change
        settling = flags_settling()
        assert 59 < settling.wait <= 60 and settling.pending_since is not None
        written_ago(61)
        assert flags_settling() == Settling(0.0, settling.pending_since, True)

    def test_the_newest_change_decides_the_quiet_period(self, subscription):
        make_rules(("Consumer", A, 1))
        written_ago(30)
        make_rules(("Consumer", provider(2), 2))  # a second change, just now
        assert flags_settling().wait > 59

    def test_the_burst_s_oldest_change_bounds_the_wait(self, subscription, asked_again):
        make_rules(("TemperatureConsumer", provider(2), 2))
        assert process_changes_task() == 0
        pending_since_ago(590)
        assert 9 < flags_settling().wait <= 10
        pending_since_ago(11)
        assert flags_settling().wait == 0

    def test_one_round_takes_a_burst(self, subscription, asked_again):
        """Of the rounds that find a burst settled at once, one takes it (and asks for
        helpers); the others join the evaluation as they are."""
        make_rules(("TemperatureConsumer", provider(2), 2))
        process_changes_task()
        began = flags_settling().pending_since
        assert burst_take(began) and not burst_take(began)
        assert flags_settling().pending_since is None

    def test_a_round_takes_only_the_burst_it_saw(self, subscription, asked_again):
        """A round that saw a burst another round took meanwhile leaves the burst begun
        since then as it is: its beginning bounds its own wait."""
        make_rules(("TemperatureConsumer", provider(2), 2))
        process_changes_task()
        seen = flags_settling().pending_since
        assert burst_take(seen)  # another round took it
        make_rules(("TemperatureConsumer", provider(3), 3))
        process_changes_task()  # a new burst begins
        assert not burst_take(seen)
        assert flags_settling().pending_since not in (None, seen)

    def test_rounds_that_evaluate_everything_or_at_once_take_the_burst(self, subscription,
                                                                        asked_again):
        make_rules(("TemperatureConsumer", provider(2), 2))
        process_changes_task()
        assert flags_settling().pending_since is not None
        assert changes_process() == 1  # the admin's and the tests' processing: at once
        assert flags_settling().pending_since is None
        make_rules(("TemperatureConsumer", provider(3), 3))
        process_changes_task()
        assert flags_settling().pending_since is not None
        FeedCursor.objects.update(read_at=None)  # a cursor to catch up: everything at once
        make_rules(("TemperatureConsumer", provider(4), 4))
        assert process_changes_task() == 1
        assert flags_settling().pending_since is None


@pytest.fixture
def subscription(api, settings):
    make_instances(instance_body("ProviderA"))
    make_rules(("TemperatureConsumer", A, 1))
    subscribe(api, subscription_body(notify=mqtt_notify("t/debounce")), query="?trigger=true")
    feed_skip()
    settings.SUBSCRIPTION_QUIET_SECONDS, settings.SUBSCRIPTION_MAX_DELAY_SECONDS = 60, 600
    return Subscription.objects.get()


def notifications() -> int:
    return NotificationDelivery.objects.count()


@pytest.fixture
def asked_again(monkeypatch) -> list[float]:
    """The task's requests for itself (store/services/nudge.py `processing_later`)."""
    asked: list[float] = []
    monkeypatch.setattr("subscriptions.tasks.processing_later", asked.append)
    return asked


class ProcessChangesTaskTests:
    def test_a_burst_is_evaluated_once_after_it_has_ended(self, subscription, asked_again):
        before = notifications()
        for number in range(2, 12):  # ten changes, each a round that finds the burst going on
            make_rules(("TemperatureConsumer", provider(number), number))
            assert process_changes_task() == 0
            assert 59 < asked_again[-1] <= 60  # when the newest change will have settled
            # Flagged at once: the quiet period is not spent reading the feed afterwards.
            assert not feed_unread() and is_flagged(Subscription.objects.get())
        assert notifications() == before
        written_ago(61)  # the quiet period has passed
        assert process_changes_task() == 1
        assert notifications() == before + 1 and not is_flagged(Subscription.objects.get())
        assert len(asked_again) == 10
        results = NotificationDelivery.objects.latest("created_at").payload["payload"]["results"]
        assert len(results) == 11

    def test_a_flag_outside_the_burst_does_not_end_the_wait(self, api, subscription,
                                                            asked_again):
        """An expired subscription keeps its flag until it is removed: it neither ends a
        burst's wait nor has the burst's changes evaluated one by one."""
        make_rules(("OtherConsumer", A, 1))
        subscribe(api, subscription_body(notify=mqtt_notify("t/other")), "OtherConsumer",
                  query="?trigger=true")
        feed_skip()
        Subscription.objects.filter(target="OtherConsumer").update(
            expires_at=dt.datetime(2000, 1, 1, tzinfo=dt.UTC))
        flags_set_all(Subscription.objects.filter(target="OtherConsumer"))
        before = notifications()
        outcomes = []
        for number in range(2, 6):
            make_rules(("TemperatureConsumer", provider(number), number))
            outcomes.append(process_changes_task())
        assert outcomes == [0, 0, 0, 0] and notifications() == before
        written_ago(61)
        assert process_changes_task() == 1 and notifications() == before + 1

    def test_a_burst_that_goes_on_is_evaluated_after_the_longest_delay(self, subscription,
                                                                        asked_again):
        make_rules(("TemperatureConsumer", provider(2), 2))
        assert process_changes_task() == 0 and asked_again
        pending_since_ago(601)  # the burst began longer ago than SUBSCRIPTION_MAX_DELAY_SECONDS
        make_rules(("TemperatureConsumer", provider(3), 3))  # and it goes on
        assert process_changes_task() == 1
        assert not feed_unread() and len(asked_again) == 1

    def test_the_longest_delay_counts_from_the_change_not_from_a_late_round(
            self, subscription, asked_again):
        """A round that comes late (busy workers, a lost nudge picked up by beat) dates the
        burst from its oldest change, not from its own flagging."""
        make_rules(("TemperatureConsumer", provider(2), 2))
        written_ago(601)
        make_rules(("TemperatureConsumer", provider(3), 3))  # the burst goes on
        assert process_changes_task() == 1 and not asked_again

    def test_the_round_that_takes_the_burst_asks_for_helpers(self, subscription, asked_again,
                                                             monkeypatch):
        helped = []
        monkeypatch.setattr("subscriptions.tasks.subscriptions_evaluate_flagged",
                            lambda helpers: helped.append(helpers) or 0)
        make_rules(("TemperatureConsumer", provider(2), 2))
        process_changes_task()
        written_ago(61)
        process_changes_task()
        flags_set_all()  # still flagged (the evaluation above was a stand-in)
        process_changes_task()  # a later round joins, without helpers
        assert helped == [True, False]

    def test_a_cursor_not_read_lately_processes_at_once(self, subscription, asked_again):
        """A cursor never read (or not trusted) evaluates every live subscription: there is
        no burst to wait for, only a position to catch up."""
        FeedCursor.objects.all().delete()
        make_rules(("TemperatureConsumer", provider(2), 2))
        assert process_changes_task() == 1 and not asked_again

    def test_a_round_with_nothing_flagged_evaluates_nothing(self, subscription, asked_again):
        make_rules(("SomeoneElse", provider(2), 2))  # concerns no subscription
        assert process_changes_task() == 0 and len(asked_again) == 1  # a burst may go on
        written_ago(61)
        assert process_changes_task() == 0 and len(asked_again) == 1
        assert flags_settling().pending_since is None  # taken: the next burst begins anew


class ProcessingLaterTests:
    def test_with_a_broker_the_task_is_sent_with_the_wait_as_countdown(self, monkeypatch):
        sent = []
        nudge.current_app.conf.task_always_eager = False  # restored by conftest's celery_mode
        monkeypatch.setattr(nudge.current_app, "send_task",
                            lambda name, countdown: sent.append((name, countdown)))
        nudge.processing_later(0.25)
        assert sent == [("subscriptions.process_changes", 0.25)]

    def test_the_nudge_asks_for_the_round_at_the_commit(
            self, monkeypatch, django_capture_on_commit_callbacks):
        asked = []
        monkeypatch.setattr(nudge, "processing_later", asked.append)
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            nudge.processing_nudge()
        assert asked == []  # not before the commit
        for callback in callbacks:
            callback()
        assert asked == [0.0]  # the round flags during the quiet period

    def test_without_a_broker_the_schedulers_thread_is_asked(self, monkeypatch, settings):
        asked = []
        nudge.current_app.conf.task_always_eager = True
        monkeypatch.setattr(nudge, "in_process_runner",
                            lambda task, **timing: asked.append((task, timing)))
        nudge.processing_later(0.25)
        assert asked == [("subscriptions.process_changes",
                          {"quiet": 0.25, "max_delay": settings.SUBSCRIPTION_MAX_DELAY_SECONDS})]


SETTINGS_PRINTED = ("import config.gunicorn; from django.conf import settings; "
                    "print(settings.SUBSCRIPTION_QUIET_SECONDS, "
                    "settings.SUBSCRIPTION_MAX_DELAY_SECONDS)")


@pytest.mark.parametrize("env, name", [
    ({"SUBSCRIPTION_QUIET_SECONDS": "0"}, "SUBSCRIPTION_QUIET_SECONDS"),
    ({"SUBSCRIPTION_MAX_DELAY_SECONDS": "-1"}, "SUBSCRIPTION_MAX_DELAY_SECONDS"),
    ({"SUBSCRIPTION_QUIET_SECONDS": "2", "SUBSCRIPTION_MAX_DELAY_SECONDS": "1"},
     "SUBSCRIPTION_MAX_DELAY_SECONDS must be at least"),
    ({"SUBSCRIPTION_COALESCE_SECONDS": "1"}, "SUBSCRIPTION_QUIET_SECONDS and"),
])
def test_an_invalid_debounce_setting_stops_the_start(env, name):
    assert_start_refused("ImproperlyConfigured", name, code=SETTINGS_PRINTED, **env)


def test_the_debounce_defaults_to_50_ms_and_a_second():
    result = started(SETTINGS_PRINTED)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0.05", "1.0"]
