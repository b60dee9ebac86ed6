"""Flagged subscriptions are evaluated in batches (subscriptions/services/evaluation.py
`subscriptions_evaluate`): a change that concerns many subscriptions costs a few statements,
not a transaction per subscription, and pushes exactly what evaluating them one by one would. These
tests commit, so that the previews read the pull snapshot as in production."""
import threading
from types import SimpleNamespace

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from notifications import handover
from notifications import outbox as notification_services
from notifications.models import NotificationDelivery
from orchestration.models import OrchestrationJob, OrchestrationLock
from orchestration.snapshot import state as snapshot
from orchestration.snapshot.state import pull_snapshot
from subscriptions.services import evaluation
from subscriptions.models import EvaluationFlag, Subscription
from subscriptions.services.evaluation import changes_process
from tests.concurrency import Background, lock_waiters, wait_until
from tests.factories import make_instances, make_rules
from tests.store.helpers import instance_body
from tests.subscriptions.helpers import (
    feed_skip,
    flagged_subscriptions,
    flags_set_all,
    is_flagged,
    mqtt_notify,
    subscribe,
    subscription_body,
)

pytestmark = pytest.mark.django_db(transaction=True)

SHARED = "Shared|temperatureInfo|1.0.0"


@pytest.fixture
def subscribers(api, settings):
    """Consumers Car0..Car<n-1>, each subscribed to its rule to the shared instance, with
    the initial result already pushed."""
    settings.PULL_SNAPSHOT = True

    def make(count: int) -> list[Subscription]:
        make_instances(instance_body("Shared", metadata={"v": 1}))
        make_rules(*[(f"Car{n}", SHARED, 1) for n in range(count)])
        for n in range(count):
            answer = subscribe(api, subscription_body(notify=mqtt_notify(f"t/{n}")),
                               consumer=f"Car{n}", query="?trigger=true")
            assert answer.status_code in (200, 201), answer.content
        feed_skip()  # the setup's own changes
        NotificationDelivery.objects.all().delete()
        pull_snapshot.load()
        return list(Subscription.objects.order_by("target"))

    return make


@pytest.fixture
def handed_over(monkeypatch) -> tuple[list, list]:
    """The deliveries handed to this process's sender (`deliveries_send_here`) and the ids
    handed to the queue, instead of sending them."""
    here, queued = [], []
    monkeypatch.setattr(notification_services, "deliveries_send_here",
                        lambda deliveries: here.extend(deliveries))
    monkeypatch.setattr(notification_services, "deliveries_enqueue",
                        lambda **kwargs: queued.extend(kwargs["delivery_ids"]))
    return here, queued


def _metadata_pushed() -> dict[str, dict]:
    return {delivery.receiver: delivery.payload["payload"]["results"][0]["metadata"]
            for delivery in NotificationDelivery.objects.all()}


class BatchEvaluationTests:
    def test_one_change_for_many_subscriptions_costs_the_same_few_statements(
            self, subscribers, monkeypatch):
        subscribers(30)
        sent = []  # the sends are counted apart: evaluation's statements are measured here
        monkeypatch.setattr(notification_services, "deliveries_send_here",
                            lambda deliveries: sent.extend(d.id for d in deliveries))
        make_instances(instance_body("Shared", metadata={"v": 2}))
        pull_snapshot.load()  # both rounds find the snapshot current (no refresh reads)
        with CaptureQueriesContext(connection) as many:
            assert changes_process() == 30
        assert len(sent) == 30
        assert _metadata_pushed() == {f"Car{n}": {"v": 2} for n in range(30)}
        assert OrchestrationJob.objects.filter(type="PUSH", status="DONE",
                                               result_count=1).count() == 30 * 2
        assert not flagged_subscriptions().exists()

        make_instances(instance_body("Shared", metadata={"v": 3}))
        Subscription.objects.filter(target__in=["Car0", "Car1"]).update(
            last_fingerprint="")  # two of them would have pushed anyway
        pull_snapshot.load()
        with CaptureQueriesContext(connection) as again:
            assert changes_process() == 30
        # The same statements whatever the number of subscriptions (none per subscription).
        assert len(many.captured_queries) < 25
        assert len(again.captured_queries) == len(many.captured_queries)

    def test_a_rounds_mqtt_notifications_are_claimed_when_written_and_sent_here(
            self, subscribers, handed_over):
        subscribers(3)
        here, queued = handed_over
        here.clear(), queued.clear()  # the subscribes' own
        make_instances(instance_body("Shared", metadata={"v": 2}))
        assert changes_process() == 3
        assert not queued
        rows = NotificationDelivery.objects.all()
        assert sorted(d.id for d in here) == sorted(row.id for row in rows)
        assert {(row.status, row.claimed_at, row.heartbeat_at) for row in rows} == {
            ("SENDING", here[0].claimed_at, here[0].claimed_at)}  # one claim, the fence

    def test_a_process_holding_many_to_send_queues_a_rounds_notifications(
            self, subscribers, handed_over, monkeypatch):
        subscribers(3)
        here, queued = handed_over
        here.clear(), queued.clear()  # the subscribes' own
        monkeypatch.setattr(handover, "SEND_HERE_MAX", 2)
        make_instances(instance_body("Shared", metadata={"v": 2}))
        assert changes_process() == 3
        assert not here
        assert sorted(queued) == sorted(NotificationDelivery.objects.filter(
            status="PENDING", claimed_at=None).values_list("id", flat=True))
        assert len(queued) == 3

    def test_the_previews_of_a_batch_share_one_read_of_the_snapshot_feed(
            self, subscribers, monkeypatch):
        subscribers(12)
        make_instances(instance_body("Shared", metadata={"v": 2}))
        reads = []
        read = snapshot.changes_since

        def counted(*args):
            # The snapshot's own background thread reads the feed every REFRESH_SECONDS;
            # its read may fall in this evaluation's, and is not the batch's.
            if threading.current_thread().name != "pull-snapshot":
                reads.append(args)
            return read(*args)

        monkeypatch.setattr(snapshot, "changes_since", counted)
        assert changes_process() == 12
        assert len(reads) == 1  # not one per subscription
        assert _metadata_pushed() == {f"Car{n}": {"v": 2} for n in range(12)}

    def test_an_unchanged_result_is_not_pushed_again(self, subscribers):
        subscribers(5)
        make_rules(("Car0", "Other|pressureInfo|1.0.0", 1))  # not in Car0's result
        assert changes_process() == 0
        assert not NotificationDelivery.objects.exists()
        assert not flagged_subscriptions().exists()

    def test_a_subscription_that_reserves_is_pushed_by_itself(self, subscribers, api):
        subscribers(3)
        exclusive = subscription_body(notify=mqtt_notify("t/exclusive"))
        exclusive["orchestrationRequest"]["exclusivityDuration"] = 60
        assert subscribe(api, exclusive, consumer="Car1").status_code == 200
        feed_skip()
        make_instances(instance_body("Shared", metadata={"v": 2, "allowExclusivity": 120}))
        assert changes_process() == 3
        pushed = {d.receiver: d.payload["payload"]["results"]
                  for d in NotificationDelivery.objects.all()}
        assert pushed["Car1"][0]["exclusiveUntil"]  # reserved for it, for real
        assert OrchestrationLock.objects.get().owner == "Car1"
        # Evaluated after the reservation committed or before it: never offered to the
        # others as theirs; they got what one-by-one evaluation would give them.
        assert all(entry.get("exclusiveUntil") is None
                   for receiver in ("Car0", "Car2") for entry in pushed[receiver])

    def test_a_subscription_another_round_holds_is_left_to_it(self, subscribers):
        subscriptions = subscribers(3)
        make_instances(instance_body("Shared", metadata={"v": 2}))
        held = subscriptions[0]
        locked, release = threading.Event(), threading.Event()

        def hold() -> None:
            from django.db import transaction
            with transaction.atomic():
                Subscription.objects.select_for_update().get(pk=held.pk)
                locked.set()
                release.wait(10)

        evaluation.changes_flag()  # all three flagged
        holder = Background(hold)
        assert locked.wait(10)
        try:
            assert evaluation.subscriptions_evaluate_flagged() == 2  # the held one: flagged
        finally:
            release.set()
            holder.outcome()
        assert is_flagged(held)
        assert changes_process() == 1
        assert _metadata_pushed() == {f"Car{n}": {"v": 2} for n in range(3)}


class FlaggedDuringEvaluationTests:
    """A round that flags subscriptions a batch is evaluating waits for the batch's commit
    (which clears the flags it evaluated) and flags them again (flagging.py): a change
    committed after the batch's previews is evaluated next, not lost."""

    def test_a_change_flagged_after_the_previews_is_evaluated_after_the_batch(
            self, subscribers, monkeypatch):
        subscribers(2)
        make_instances(instance_body("Shared", metadata={"v": 2}))
        evaluation.changes_flag()
        ids = list(flagged_subscriptions().order_by("pk").values_list("pk", flat=True))
        assert len(ids) == 2
        previewed, release = threading.Event(), threading.Event()
        preview = evaluation.orchestrate_preview

        def held_after_the_first(**kwargs):
            result = preview(**kwargs)  # the batch's view: v 2
            if not previewed.is_set():
                previewed.set()
                release.wait(30)
            return result

        monkeypatch.setattr(evaluation, "orchestrate_preview", held_after_the_first)
        batch = Background(lambda: evaluation.subscriptions_evaluate(ids).pushed)
        try:
            assert previewed.wait(10)
            make_instances(instance_body("Shared", metadata={"v": 3}))  # after the previews
            flagging = Background(evaluation._changes_flag_locked)
            assert wait_until(lambda: lock_waiters() > 0), "the round did not wait"
        finally:
            release.set()
        assert batch.outcome() == 2  # what it previewed: v 2
        assert flagging.outcome() is False  # flagged what the change concerns
        assert sorted(flagged_subscriptions().values_list("pk", flat=True)) == sorted(ids)
        assert _metadata_pushed() == {f"Car{n}": {"v": 2} for n in range(2)}
        NotificationDelivery.objects.all().delete()
        assert evaluation.subscriptions_evaluate_flagged() == 2
        assert _metadata_pushed() == {f"Car{n}": {"v": 3} for n in range(2)}
        assert not flagged_subscriptions().exists()

    @pytest.mark.parametrize("locked_too", [("self", "evaluation_flag"), ("self",)])
    def test_a_flag_cleared_by_a_commit_after_a_lock_statement_began_is_not_taken(
            self, subscribers, locked_too):
        """What makes each flagged subscription evaluated once (`subscriptions_evaluate`
        locks the flags with the subscriptions): a locking read whose snapshot still saw a
        flag that another transaction's commit then deleted leaves the subscription out,
        if it locks the flag too. (Here the read waits for that transaction; with SKIP
        LOCKED it meets the row after the commit.) Locking only the subscription, which
        an unchanged result leaves as it was, would evaluate it a second time."""
        [subscription] = subscribers(1)
        flags_set_all()
        locked, release = threading.Event(), threading.Event()

        def evaluate_and_clear() -> None:
            with transaction.atomic():
                list(Subscription.objects.select_for_update().filter(pk=subscription.pk))
                locked.set()
                release.wait(10)
                EvaluationFlag.objects.filter(pk=subscription.pk).delete()

        def lock_flagged() -> list:
            with transaction.atomic():
                return list(Subscription.objects.filter(
                    pk=subscription.pk, evaluation_flag__isnull=False).select_related(
                    "evaluation_flag").select_for_update(of=locked_too))

        first = Background(evaluate_and_clear)
        try:
            assert locked.wait(10)
            second = Background(lock_flagged)
            assert wait_until(lambda: lock_waiters() > 0)
        finally:
            release.set()
        assert first.outcome() is None
        assert second.outcome() == ([] if "evaluation_flag" in locked_too else [subscription])


def test_batches_start_short_and_double_up_to_the_largest(monkeypatch):
    """A change's first subscribers are notified after a short batch; later batches grow to
    EVALUATION_BATCH, and together the batches cover every flagged subscription once."""
    monkeypatch.setattr(evaluation, "FIRST_BATCH", 50)
    monkeypatch.setattr(evaluation, "EVALUATION_BATCH", 500)
    assert evaluation.evaluation_batches(0) == []
    assert evaluation.evaluation_batches(30) == [(0, 30)]
    assert evaluation.evaluation_batches(100) == [(0, 50), (50, 100)]
    sizes = [end - start for start, end in evaluation.evaluation_batches(10_000)]
    assert sizes[:5] == [50, 100, 200, 400, 500] and sum(sizes) == 10_000
    assert max(sizes) == 500
    monkeypatch.setattr(evaluation, "EVALUATION_BATCH", 2)  # never longer than it
    assert evaluation.evaluation_batches(5) == [(0, 2), (2, 4), (4, 5)]


class EvaluationHelpersTests:
    """A round that flags more than one batch asks other worker processes to share the
    evaluation (`subscriptions.evaluate_flagged`); each batch is evaluated once."""

    def test_a_round_of_several_batches_asks_for_helpers_with_a_broker(
            self, subscribers, monkeypatch, settings):
        subscribers(5)
        settings.SUBSCRIPTION_EVALUATION_PROCESSES = 3
        monkeypatch.setattr(evaluation, "EVALUATION_BATCH", 2)  # 5 flagged: 3 batches
        asked = []
        monkeypatch.setattr(evaluation, "current_app", SimpleNamespace(  # with a broker
            conf=SimpleNamespace(task_always_eager=False),
            send_task=lambda name, args, expires: asked.append((name, args))))
        make_instances(instance_body("Shared", metadata={"v": 2}))
        assert changes_process() == 5  # what no helper took, the round evaluated itself
        assert asked == [("subscriptions.evaluate_flagged", [1, 3]),
                         ("subscriptions.evaluate_flagged", [2, 3])]
        assert evaluation.subscriptions_evaluate_flagged(share=(1, 3)) == 0  # nothing left
        Subscription.objects.update(last_fingerprint="")
        flags_set_all()
        asked.clear()
        assert changes_process() == 5  # no new change: it joins, and asks nobody
        assert asked == []

    def test_no_helpers_for_one_batch_nor_without_a_broker(self, subscribers, monkeypatch,
                                                           settings):
        subscribers(2)
        settings.SUBSCRIPTION_EVALUATION_PROCESSES = 4
        asked = []
        monkeypatch.setattr(evaluation.current_app, "send_task",
                            lambda name, args: asked.append((name, args)))
        make_instances(instance_body("Shared", metadata={"v": 2}))
        assert changes_process() == 2  # one batch
        monkeypatch.setattr(evaluation, "EVALUATION_BATCH", 1)
        make_instances(instance_body("Shared", metadata={"v": 3}))
        assert changes_process() == 2  # two batches, but eager: no worker to ask
        assert asked == []

    def test_helpers_starting_apart_evaluate_each_subscription_once(
            self, subscribers, monkeypatch):
        subscribers(8)
        monkeypatch.setattr(evaluation, "EVALUATION_BATCH", 2)
        make_instances(instance_body("Shared", metadata={"v": 2}))
        evaluation.changes_flag()
        barrier = threading.Barrier(3)
        helpers = [Background(lambda index=index: evaluation.subscriptions_evaluate_flagged(
            share=(index, 3)), barrier=barrier) for index in range(3)]
        assert sum(helper.outcome() for helper in helpers) == 8
        assert NotificationDelivery.objects.count() == 8  # one push each
        assert _metadata_pushed() == {f"Car{n}": {"v": 2} for n in range(8)}
        assert not flagged_subscriptions().exists()
