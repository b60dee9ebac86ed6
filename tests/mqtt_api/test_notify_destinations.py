"""The MQTT interface's subscribe refuses an internal HTTP notify address like the HTTP API's
(issue 29, item 2; tests/subscriptions/test_notify_destinations.py)."""
import pytest

from subscriptions.models import Subscription
from tests.mqtt_api.clients import PULL_BODY, Api, Caller

pytestmark = pytest.mark.django_db(transaction=True)


class MqttInterfaceSubscribeTests:
    def test_it_refuses_a_loopback_notify_address(self, catalog, mqtt_broker, base, tmp_path):
        _, port = mqtt_broker
        # The suite allows loopback for every process it starts; this one allows nothing.
        api = Api(port, base, tmp_path / "api.log", NOTIFY_HTTP_ALLOWED_NETWORKS="")
        caller = Caller(port, base)
        try:
            answer = caller.ask("orchestration/subscribe", {
                "orchestrationRequest": PULL_BODY, "notifyInterface": {
                    "protocol": "HTTP", "properties": {"address": "::1", "port": 5432,
                                                       "method": "POST", "path": "/"}}})
        finally:
            caller.close()
            api.stop()
        assert answer["status"] == 400
        assert answer["payload"]["errorMessage"] == \
            "Notify address ::1 is a loopback address; see NOTIFY_HTTP_ALLOWED_NETWORKS"
        assert Subscription.objects.count() == 0
