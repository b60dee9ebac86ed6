"""Push notifications end to end: the API, a real Celery worker over the real Redis, the real
Mosquitto broker and a local HTTP endpoint (SPEC §5, "Push notifications")."""
import json

import pytest

from notifications.models import NotificationDelivery
from subscriptions.models import Subscription
from tests.concurrency import wait_for
from tests.endpoints import HttpSink
from tests.helpers import SYSOP
from tests.ports import reserved_port
from tests.store.helpers import (
    CREATE,
    I_CREATE,
    I_UPDATE,
    entry,
    http_interface,
    instance_body,
)
from tests.subscriptions.helpers import (
    feed_unread,
    flagged_subscriptions,
    mqtt_notify,
    push_element,
    push_subscribe,
    subscribe,
    subscription_body,
)

pytestmark = pytest.mark.django_db(transaction=True)

A, B = "ProviderA|temperatureInfo|1.0.0", "ProviderB|temperatureInfo|1.0.0"
CONSUMER = "TemperatureConsumer"


def create_rule(api, instance_id: str, priority: int, consumer: str = CONSUMER) -> None:
    response = api.post(CREATE, {"entries": [entry(consumer, instance_id, priority)]},
                        format="json", **SYSOP)
    assert response.status_code == 201, response.content


def results_of(message) -> list[str]:
    body = json.loads(message.payload)
    assert (body["receiver"], body["sender"]) == (CONSUMER, "SimpleStoreServiceOrchestration")
    return [r["serviceInstanceId"] for r in body["payload"]["results"]]


def changes_evaluated() -> bool:
    """The worker has processed the committed changes: its cursor is past them (the same
    transaction flags the subscriptions they concern) and no subscription is flagged any more
    (an evaluation clears the flag in the transaction that writes a push's notification).
    Checked in this order, so a flag set after the first look cannot be missed."""
    return (not feed_unread()
            and not flagged_subscriptions().exists())


@pytest.fixture
def mqtt_subscription(api, celery_worker, mqtt_receiver):
    response = api.post(I_CREATE, {"instances": [instance_body("ProviderA"),
                                                 instance_body("ProviderB")]},
                        format="json", **SYSOP)
    assert response.status_code == 201
    create_rule(api, A, 1)
    assert subscribe(api, subscription_body(notify=mqtt_notify(mqtt_receiver.topic)),
                     query="?trigger=true").status_code == 201
    first = mqtt_receiver.get()
    assert first.qos == 1
    assert results_of(first) == [A]
    return mqtt_receiver


class PushWithWorkerTests:
    def test_it_pushes_a_new_result_after_an_operator_adds_a_rule(self, api, mqtt_subscription):
        create_rule(api, B, 2)
        assert results_of(mqtt_subscription.get()) == [A, B]
        wait_for(lambda: NotificationDelivery.objects.filter(status="DELIVERED").count() == 2,
                 what="both deliveries recorded as delivered")

    def test_it_pushes_after_an_instance_in_the_result_changes(self, api, mqtt_subscription):
        update = {"instances": [{"instanceId": A, "metadata": {"unit": "kelvin"},
                                 "interfaces": [http_interface()]}]}
        assert api.put(I_UPDATE, update, format="json", **SYSOP).status_code == 200
        body = json.loads(mqtt_subscription.get().payload)
        assert body["payload"]["results"][0]["metadata"] == {"unit": "kelvin"}

    def test_it_does_not_push_when_the_result_did_not_change(self, api, mqtt_subscription):
        create_rule(api, B, 1, consumer="SomeoneElse")
        create_rule(api, "X|pressureInfo|1.0.0", 1)  # another service of the same consumer
        wait_for(changes_evaluated, what="the worker to evaluate the changes")
        assert NotificationDelivery.objects.count() == 1  # a push writes one; none was sent

    def test_it_delivers_over_http_with_the_configured_method(self, api, celery_worker,
                                                              http_sink):
        create_rule(api, A, 1)
        notify = {"protocol": "http", "properties": http_sink.properties("put", "/notify")}
        subscribe(api, subscription_body(notify=notify), query="?trigger=true")
        wait_for(lambda: http_sink.requests, what="the HTTP notification")
        request = http_sink.requests[0]
        assert (request.method, request.path) == ("PUT", "/notify")
        assert request.headers["content-type"] == "application/json"
        assert "authorization" not in request.headers
        assert [r["serviceInstanceId"] for r in request.json()["results"]] == [A]

    def test_it_retries_until_the_endpoint_is_back(self, api, celery_worker):
        port = reserved_port()
        create_rule(api, A, 1)
        notify = {"protocol": "HTTP", "properties": {"address": "127.0.0.1", "port": port,
                                                     "method": "POST", "path": "/n"}}
        subscribe(api, subscription_body(notify=notify), query="?trigger=true")
        wait_for(lambda: NotificationDelivery.objects.filter(attempts__gte=1).exists(),
                 what="a failed first attempt")
        failed = NotificationDelivery.objects.get()
        assert failed.status in ("PENDING", "SENDING") and failed.last_error
        sink = HttpSink(bind_port=port)
        try:
            wait_for(lambda: sink.requests, timeout=30, what="the retried notification")
            wait_for(lambda: NotificationDelivery.objects.get().status == "DELIVERED",
                     what="the delivery recorded as delivered")
            assert NotificationDelivery.objects.get().attempts >= 2
        finally:
            sink.close()

    def test_it_never_notifies_an_expired_subscription(self, api, mqtt_subscription, http_sink):
        expired = Subscription.objects.get()
        Subscription.objects.update(expires_at="2000-01-01T00:00:00Z")
        # A live subscription for the same consumer, flagged by the same change: once it is
        # notified, the change has been evaluated (an expired one stays flagged, unnotified).
        notify = {"protocol": "HTTP", "properties": http_sink.properties()}
        assert push_subscribe(api, push_element(notifyInterface=notify)).status_code == 201
        create_rule(api, B, 2)
        wait_for(lambda: http_sink.requests, what="the live subscription's notification")
        assert [r["serviceInstanceId"] for r in http_sink.requests[0].json()["results"]] == [A, B]
        assert NotificationDelivery.objects.filter(subscription_id=expired.id).count() == 1

    def test_it_keeps_the_id_when_a_subscription_is_overwritten(self, api, mqtt_subscription):
        first = Subscription.objects.get().id
        response = subscribe(api, subscription_body(notify=mqtt_notify(mqtt_subscription.topic)),
                             query="?trigger=true")
        assert (response.status_code, response.content.decode()) == (200, str(first))
        assert results_of(mqtt_subscription.get()) == [A]
