from django.utils import timezone

from orchestration.snapshot.changes import Change, FeedPosition, changes_since, feed_start
from subscriptions.models import EvaluationFlag, FeedCursor, Subscription
from tests.helpers import as_system

SUBSCRIBE = "/serviceorchestration/orchestration/subscribe"
UNSUBSCRIBE = "/serviceorchestration/orchestration/unsubscribe"

HTTP_NOTIFY = {"protocol": "HTTP", "properties": {"address": "127.0.0.1", "port": "8080",
                                                  "method": "POST", "path": "/notify"}}


def mqtt_notify(topic: str = "plant/notify") -> dict:
    return {"protocol": "MQTT", "properties": {"topic": topic}}


def subscribe(api, body, consumer: str = "TemperatureConsumer", query: str = ""):
    return api.post(f"{SUBSCRIBE}{query}", body, format="json", **as_system(consumer))


def subscription_body(service_definition: str | None = "temperatureInfo", notify=None,
                      **fields) -> dict:
    request = {"serviceRequirement": {"serviceDefinition": service_definition}}
    body = {"orchestrationRequest": request, "notifyInterface": notify or HTTP_NOTIFY}
    body.update(fields)
    return body


PUSH = "/serviceorchestration/orchestration/mgmt/push"
PUSH_SUBSCRIBE = f"{PUSH}/subscribe"
PUSH_TRIGGER = f"{PUSH}/trigger"
PUSH_UNSUBSCRIBE = f"{PUSH}/unsubscribe"
PUSH_QUERY = f"{PUSH}/query"
SUBSCRIPTION_QUERY = "/serviceorchestration/orchestration/subscriptions/query"


def push_element(target: str = "TemperatureConsumer", service_definition: str | None =
                 "temperatureInfo", **fields) -> dict:
    """One element of push management's subscribe body."""
    return subscription_body(service_definition, targetSystemName=target, **fields)


def push_subscribe(api, *elements: dict, owner: str = "Sysop"):
    return api.post(PUSH_SUBSCRIBE, {"subscriptions": list(elements)}, format="json",
                    **as_system(owner))


def stored_subscriptions() -> list[tuple]:
    """Every stored subscription, to compare before and after a request."""
    return list(Subscription.objects.order_by("pk").values_list("pk", "owner", "target",
                                                                "expires_at"))


def flagged_subscriptions():
    """The subscriptions awaiting evaluation (an `EvaluationFlag` each)."""
    return Subscription.objects.filter(evaluation_flag__isnull=False)


def is_flagged(subscription: Subscription) -> bool:
    return EvaluationFlag.objects.filter(pk=subscription.pk).exists()


def flags_set_all(subscriptions=None) -> None:
    """Flag every subscription (of the queryset `subscriptions`), as a round would."""
    ids = (subscriptions or Subscription.objects.all()).values_list("pk", flat=True)
    EvaluationFlag.objects.bulk_create([EvaluationFlag(subscription_id=pk) for pk in ids],
                                       ignore_conflicts=True)


def flags_clear_all() -> None:
    """No subscription awaits evaluation (as if all were evaluated)."""
    EvaluationFlag.objects.all().delete()


def feed_skip() -> None:
    """Move the subscriptions' feed cursor past every change so far: the setup's own changes
    are not the test's to process."""
    position = feed_start()
    FeedCursor.objects.update_or_create(pk=1, defaults={
        "last_id": position.last_id, "running": list(position.running),
        "read_at": timezone.now()})


def feed_unread() -> list[Change]:
    """The changes in the feed after the subscriptions' cursor (all when it was never read)."""
    cursor = FeedCursor.objects.filter(pk=1).first()
    position = FeedPosition(cursor.last_id, tuple(cursor.running)) if cursor else FeedPosition(0)
    return changes_since(position, 100_000)[0]
