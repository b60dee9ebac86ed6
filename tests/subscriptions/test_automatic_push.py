"""Automatic pushes when a subscription's result may have changed (SPEC §5), run in-process:
the services and tasks are called directly; the real-worker tests are in
test_push_with_worker.py."""
import datetime as dt

import pytest
from django.utils import timezone

from conventions.exceptions import ExternalServerError
from notifications.models import NotificationDelivery
from orchestration.models import OrchestrationLock
from orchestration.pull.reservations import locks_remove_expired
from store.models import Rule, ServiceInstance
from store.services.instances import instance_remove_expired
from store.services.rules import rule_delete_many, rule_priorities_modify
from subscriptions.services import subscribing
from subscriptions.models import Subscription
from subscriptions.services.evaluation import changes_process
from subscriptions.services.subscribing import subscriptions_remove_expired
from tests.factories import make_instances, make_rules
from tests.store.helpers import instance_body
from tests.subscriptions.helpers import (
    is_flagged,
    feed_skip,
    feed_unread,
    mqtt_notify,
    push_element,
    push_subscribe,
    subscribe,
    subscription_body,
)

pytestmark = pytest.mark.django_db

A, B = "ProviderA|temperatureInfo|1.0.0", "ProviderB|temperatureInfo|1.0.0"


@pytest.fixture
def subscription(api):
    make_instances(instance_body("ProviderA", metadata={"v": 1}), instance_body("ProviderB"))
    make_rules(("TemperatureConsumer", A, 1))
    subscribe(api, subscription_body(notify=mqtt_notify("t/auto")), query="?trigger=true")
    feed_skip()  # the setup's own changes
    return Subscription.objects.get()


def pushed_results() -> list[list[str]]:
    """Instance ids of every queued notification, oldest first."""
    return [[r["serviceInstanceId"] for r in d.payload["payload"]["results"]]
            for d in NotificationDelivery.objects.order_by("created_at")]


class AutomaticPushTests:
    def test_it_pushes_after_a_rule_of_the_consumer_is_created(self, subscription):
        make_rules(("TemperatureConsumer", B, 2))
        assert changes_process() == 1
        assert pushed_results() == [[A], [A, B]]
        assert not is_flagged(Subscription.objects.get())
        assert not feed_unread()

    def test_it_pushes_after_priorities_change_and_rules_go(self, subscription):
        rule_b = make_rules(("TemperatureConsumer", B, 2))[0]
        changes_process()
        rule_a = Rule.objects.get(service_instance_id=A)
        rule_priorities_modify(priorities={str(rule_a.id): 3}, requester="Sysop")
        changes_process()
        rule_delete_many(ids=[rule_b.id])
        changes_process()
        assert pushed_results() == [[A], [A, B], [B, A], [A]]

    def test_it_does_not_push_when_the_result_is_unchanged(self, subscription):
        make_rules(("OtherConsumer", B, 1), ("TemperatureConsumer", "X|pressureInfo|1.0.0", 1))
        make_instances(instance_body("ProviderA", metadata={"v": 1}))  # replaced, identical
        assert changes_process() == 0
        assert pushed_results() == [[A]]

    def test_it_pushes_after_an_instance_in_the_result_changes(self, subscription):
        make_instances(instance_body("ProviderA", metadata={"v": 2}))
        assert changes_process() == 1
        assert NotificationDelivery.objects.order_by("created_at").last().payload[
            "payload"]["results"][0]["metadata"] == {"v": 2}

    def test_it_pushes_after_an_instance_behind_a_rule_expires(self, subscription):
        ServiceInstance.objects.filter(service_instance_id=A).update(
            expires_at=timezone.now() - dt.timedelta(seconds=1))
        assert instance_remove_expired() == 1
        changes_process()
        # The rule stays, its instance is unknown now: the result loses the catalog data.
        last = NotificationDelivery.objects.order_by("created_at").last()
        assert set(last.payload["payload"]["results"][0]) == {
            "serviceInstanceId", "cloudIdentitifer", "providerName", "serviceDefinitition",
            "version"}

    def test_it_pushes_when_a_reservation_of_another_consumer_ends(self, subscription):
        OrchestrationLock.objects.create(service_instance_id=B, owner="Someone",
                                         created_at=timezone.now(),
                                         expires_at=timezone.now() + dt.timedelta(minutes=1))
        make_rules(("TemperatureConsumer", B, 2))
        changes_process()
        assert pushed_results()[-1] == [A]  # B is reserved by someone else
        OrchestrationLock.objects.update(expires_at=timezone.now() - dt.timedelta(seconds=1))
        assert locks_remove_expired(now=timezone.now()) == 1
        assert changes_process() == 1
        assert pushed_results()[-1] == [A, B]

    def test_it_coalesces_a_burst_of_changes_into_one_push(self, subscription):
        for priority in range(2, 12):
            make_rules(("TemperatureConsumer", f"P{priority}|temperatureInfo|1.0.0", priority))
        assert len(feed_unread()) == 10
        assert changes_process() == 1
        assert len(pushed_results()[-1]) == 11

    def test_it_keeps_only_the_newest_pending_notification(self, subscription):
        make_rules(("TemperatureConsumer", B, 2))
        changes_process()
        statuses = list(NotificationDelivery.objects.order_by("created_at")
                        .values_list("status", flat=True))
        # The round's own is claimed when written, for this process to send after the commit.
        assert statuses == ["CANCELLED", "SENDING"]

    def test_it_never_evaluates_an_expired_subscription(self, subscription):
        Subscription.objects.update(expires_at=timezone.now() - dt.timedelta(seconds=1))
        make_rules(("TemperatureConsumer", B, 2))
        assert changes_process() == 0
        assert subscriptions_remove_expired() == 1
        assert not Subscription.objects.exists()
        assert set(NotificationDelivery.objects.values_list("status", flat=True)) == {"CANCELLED"}

    def test_it_keeps_a_failing_subscription_flagged_and_goes_on(self, subscription, api):
        subscribe(api, subscription_body(notify=mqtt_notify("t/other")), consumer="Second")
        make_rules(("Second", B, 1), ("TemperatureConsumer", B, 2))
        Subscription.objects.filter(owner="TemperatureConsumer").update(
            orchestration_request={"orchestrationFlags": {"BROKEN": True}})
        assert changes_process() == 1
        assert is_flagged(Subscription.objects.get(owner="TemperatureConsumer"))


@pytest.mark.django_db(transaction=True)  # previews read the pull snapshot, as in production
class ResultAtSubscribeTests:
    """Without `trigger`, a subscription is pushed only a result that changed after it was
    made (issue 28, item 5): it starts from the result at the subscribe, so neither a change
    made before it and processed after it nor a change that leaves its result as it was is
    pushed; a change made while it was being written is."""

    @pytest.fixture
    def catalog(self):
        """A and B in the catalog, a rule to A; the changes not processed yet."""
        make_instances(instance_body("ProviderA"), instance_body("ProviderB"))
        make_rules(("TemperatureConsumer", A, 1))

    def quiet_subscribe(self, api, status: int = 201, **requirement):
        body = subscription_body(notify=mqtt_notify("t/quiet"))
        body["orchestrationRequest"]["serviceRequirement"].update(requirement)
        response = subscribe(api, body)
        assert response.status_code == status, response.content

    def test_a_change_made_before_the_subscribe_is_not_pushed(self, api, catalog):
        self.quiet_subscribe(api)
        assert changes_process() == 0
        assert pushed_results() == []
        assert not is_flagged(Subscription.objects.get())

    def test_a_change_that_leaves_its_result_as_it_was_is_not_pushed(self, api, catalog):
        changes_process()
        self.quiet_subscribe(api)
        make_rules(("TemperatureConsumer", "X|pressureInfo|1.0.0", 1))
        assert changes_process() == 0
        assert pushed_results() == []

    def test_a_change_after_the_subscribe_is_pushed(self, api, catalog):
        self.quiet_subscribe(api)
        make_rules(("TemperatureConsumer", B, 2))
        assert changes_process() == 1
        assert pushed_results() == [[A, B]]

    def test_subscribing_again_starts_from_the_result_of_the_new_request(self, api, catalog):
        self.quiet_subscribe(api, metadataRequirements=[{"unit": "kelvin"}])  # none
        changes_process()
        self.quiet_subscribe(api, status=200)  # overwritten in place: A now
        make_instances(instance_body("ProviderA"))  # replaced as it was
        assert changes_process() == 0
        assert pushed_results() == []

    def test_a_change_committed_while_subscribing_is_pushed_in_the_next_round(
            self, api, catalog, monkeypatch):
        changes_process()
        read = subscribing.subscription_baseline

        def read_then_change(subscribe, now):
            baseline = read(subscribe, now)
            make_rules(("TemperatureConsumer", B, 2))
            assert changes_process() == 0  # its round cannot see the subscription yet
            return baseline

        monkeypatch.setattr(subscribing, "subscription_baseline", read_then_change)
        self.quiet_subscribe(api)
        assert changes_process() == 1
        assert pushed_results() == [[A, B]]

    def test_push_management_subscriptions_start_from_the_current_result(self, api, catalog):
        response = push_subscribe(api, push_element(notifyInterface=mqtt_notify("t/managed")))
        assert response.status_code == 201, response.content
        assert changes_process() == 0
        make_rules(("TemperatureConsumer", B, 2))
        assert changes_process() == 1
        assert pushed_results() == [[A, B]]

    def test_without_a_preview_the_next_evaluated_result_is_pushed(
            self, api, catalog, monkeypatch, caplog):
        def unavailable(**kwargs):
            raise ExternalServerError("ServiceRegistry is unavailable")

        monkeypatch.setattr(subscribing, "orchestrate_preview", unavailable)
        self.quiet_subscribe(api)  # the subscribe does not depend on the other system
        assert "its current result could not be previewed" in caplog.text
        monkeypatch.undo()
        assert changes_process() == 1
        assert pushed_results() == [[A]]


class ChangeListenerTests:
    def test_it_leaves_changes_to_the_scheduler_when_tasks_run_in_process(
            self, subscription, django_capture_on_commit_callbacks):
        with django_capture_on_commit_callbacks(execute=True):
            make_rules(("TemperatureConsumer", B, 2))
        assert len(feed_unread()) == 1  # not processed inside the request
        assert pushed_results() == [[A]]
        assert changes_process() == 1


class JavaWarningPushTests:
    """Pushes re-run pull, so they carry the Java simple store's warnings like a pull (issue 12
    item 4): an unknown instance is pushed with `ignoredFields`, ignored flags with
    `ignoredFlags`."""

    def test_it_pushes_unknown_instances_with_the_java_warnings(self, api):
        make_rules(("TemperatureConsumer", A, 1))
        body = subscription_body(notify=mqtt_notify("t/java"))
        body["orchestrationRequest"]["serviceRequirement"]["interfaceTemplateNames"] = [
            "generic_http"]
        body["orchestrationRequest"]["orchestrationFlags"] = {
            "MATCHMAKING": True, "ALLOW_INTERCLOUD": False, "ONLY_INTERCLOUD": True}
        assert subscribe(api, body, query="?trigger=true").status_code == 201
        payload = NotificationDelivery.objects.get().payload["payload"]
        assert [r["serviceInstanceId"] for r in payload["results"]] == [A]
        assert payload["warnings"] == ["ignoredFields: [interfaceTemplateNames]",
                                       "ignoredFlags: [ALLOW_INTERCLOUD, ONLY_INTERCLOUD]"]

        # The instance enters the catalog: pushed again, evaluated, without ignoredFields.
        make_instances(instance_body("ProviderA"))
        assert changes_process() == 1
        payload = NotificationDelivery.objects.order_by("created_at").last().payload["payload"]
        assert payload["results"][0]["interfaces"][0]["templateName"] == "generic_http"
        assert payload["warnings"] == ["ignoredFlags: [ALLOW_INTERCLOUD, ONLY_INTERCLOUD]"]

    def test_it_accepts_only_exclusive_without_a_duration_in_a_subscription(self, api):
        body = subscription_body(notify=mqtt_notify("t/java"))
        body["orchestrationRequest"]["orchestrationFlags"] = {"ONLY_EXCLUSIVE": True}
        assert subscribe(api, body, query="?trigger=true").status_code == 201
        assert NotificationDelivery.objects.get().payload["payload"]["warnings"] == [
            "ignoredFlags: [ONLY_EXCLUSIVE]"]
