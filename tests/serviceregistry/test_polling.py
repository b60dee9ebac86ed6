"""Polling the ServiceRegistry for the instances behind live subscriptions (issue 12 item 3):
a changed, new or revoked instance becomes a catalog change, and the subscriptions behind it
are pushed when their result changed. The fake SR answers over real HTTP; tasks run eagerly."""

import pytest

from notifications.models import NotificationDelivery
from serviceregistry.models import PolledInstance
from subscriptions.models import Subscription
from subscriptions.services.evaluation import changes_process
from subscriptions.tasks import poll_instances_task
from tests.factories import make_rules
from tests.store.helpers import http_interface
from tests.subscriptions.helpers import (
    feed_skip,
    feed_unread,
    mqtt_notify,
    subscribe,
    subscription_body,
)
from tests.startup import started

pytestmark = pytest.mark.django_db

ONE, TWO = "ProviderOne|serviceOne|1.0.0", "ProviderTwo|serviceOne|1.0.0"


@pytest.fixture
def subscription(api, registry):
    registry.put_instance(ONE, interfaces=[http_interface()], metadata={"v": 1})
    make_rules(("CarConsumer1", ONE, 1))
    subscribe(api, subscription_body("serviceOne", notify=mqtt_notify("t/poll")),
              consumer="CarConsumer1", query="?trigger=true")
    poll_instances_task()  # the first sight of ONE
    changes_process()
    return Subscription.objects.get()


def pushed() -> list[list]:
    return [[(r["serviceInstanceId"], r.get("metadata")) for r in d.payload["payload"]["results"]]
            for d in NotificationDelivery.objects.order_by("created_at")]


class PollingTests:
    def test_it_records_an_instance_seen_for_the_first_time(self, api, registry):
        registry.put_instance(ONE, interfaces=[http_interface()])
        make_rules(("CarConsumer1", ONE, 1))
        subscribe(api, subscription_body("serviceOne", notify=mqtt_notify("t/poll")),
                  consumer="CarConsumer1")
        feed_skip()
        assert poll_instances_task() == 1
        assert [change.service_instance_id for change in feed_unread()] == [ONE]
        assert PolledInstance.objects.get().instance_id == ONE

    def test_it_pushes_when_a_registry_instance_changes(self, registry, subscription):
        registry.put_instance(ONE, interfaces=[http_interface()], metadata={"v": 2})
        assert poll_instances_task() == 1
        assert changes_process() == 1
        assert pushed() == [[(ONE, {"v": 1})], [(ONE, {"v": 2})]]

    def test_it_pushes_when_a_registry_instance_is_revoked(self, registry, subscription):
        registry.instances.clear()
        assert poll_instances_task() == 1
        assert changes_process() == 1
        assert pushed() == [[(ONE, {"v": 1})], [(ONE, None)]]  # kept, as unknown

    def test_it_records_nothing_when_nothing_changed(self, registry, subscription):
        assert poll_instances_task() == 0
        assert not feed_unread()
        assert len(pushed()) == 1

    def test_it_looks_up_all_subscribed_instances_in_one_call(self, registry, subscription):
        make_rules(("CarConsumer1", TWO, 2), ("NobodySubscribed", "X|serviceOne|1.0.0", 1))
        before = len(registry.lookups())
        poll_instances_task()
        assert [call.body for call in registry.lookups()[before:]] == [
            {"instanceIds": [ONE, TWO]}]

    def test_it_asks_nothing_without_live_subscriptions(self, registry):
        make_rules(("CarConsumer1", ONE, 1))
        assert poll_instances_task() == 0
        assert registry.calls == []

    def test_it_survives_a_failing_registry_and_catches_up(self, registry, subscription):
        registry.fail_with = 500
        registry.put_instance(ONE, interfaces=[http_interface()], metadata={"v": 2})
        assert poll_instances_task() == 0
        assert not feed_unread()
        registry.fail_with = None
        assert poll_instances_task() == 1
        assert changes_process() == 1
        assert pushed()[-1] == [(ONE, {"v": 2})]

    def test_it_forgets_instances_no_subscription_needs_anymore(self, registry,
                                                                subscription):
        Subscription.objects.all().delete()
        poll_instances_task()
        assert not PolledInstance.objects.exists()


def beat_entries(**env: str) -> str:
    result = started("from django.conf import settings; "
                     "print(sorted(settings.CELERY_BEAT_SCHEDULE))", **env)
    assert result.returncode == 0, result.stderr
    return result.stdout


class PollScheduleTests:
    def test_it_is_scheduled_only_with_a_service_registry(self):
        assert "poll-service-registry" in beat_entries(SERVICE_REGISTRY_URL="http://127.0.0.1:1")
        assert "poll-service-registry" not in beat_entries(SERVICE_REGISTRY_URL="")
