"""The MQTT interface's way in (mqtt_api/front_door.py): a request template on an operation's
topic is answered by the HTTP operation it mirrors, with its status codes, payloads, identity
and error envelopes (the origin being the topic). No broker here: tests/mqtt_api/ has the
round trips over the real Mosquitto."""
import json
import uuid

import pytest

from mqtt_api.front_door import answer
from mqtt_api.messages import TemplateError, parse_request, response_bytes
from store.models import Rule
from subscriptions.models import Subscription
from tests.mqtt_api.clients import PULL_BODY, SHARED, presented

pytestmark = pytest.mark.django_db(transaction=True)

BASE = "arrowhead/serviceorchestration/"


def ask(operation: str, payload=None, *, system: str | None = "Car1", params=None):
    template = {"traceId": "t-1", "responseTopic": "reply/here", "qosRequirement": 1,
                "payload": payload}
    if system is not None:
        template["authentication"] = f"SYSTEM//{system}"
    if params is not None:
        template["params"] = params
    return answer(BASE + operation, parse_request(json.dumps(template).encode()))


SUBSCRIBE = {"orchestrationRequest": {"serviceRequirement": {"serviceDefinition":
                                                             "temperatureInfo"}},
             "notifyInterface": {"protocol": "MQTT", "properties": {"topic": "car1/results"}}}


class OrchestrationTests:
    def test_pull_answers_what_http_pull_answers_to_its_requester(self, catalog):
        reply = ask("orchestration/pull", {"serviceRequirement": {"serviceDefinition":
                                                                  "temperatureInfo"}})
        assert reply.status == 200 and reply.receiver == "Car1"
        assert [r["serviceInstanceId"] for r in reply.payload["results"]] == [SHARED]

    def test_subscribe_then_unsubscribe(self, catalog):
        created = ask("orchestration/subscribe", SUBSCRIBE, params={"trigger": "false"})
        assert created.status == 201
        subscription_id = uuid.UUID(created.payload)  # the id, as text
        assert Subscription.objects.get().id == subscription_id
        again = ask("orchestration/subscribe", SUBSCRIBE)
        assert (again.status, again.payload) == (200, created.payload)  # overwritten in place
        removed = ask("orchestration/unsubscribe", created.payload)
        assert (removed.status, removed.payload) == (200, "")
        assert ask("orchestration/unsubscribe", created.payload).status == 204
        assert not Subscription.objects.exists()

    def test_subscribe_with_trigger_param_pushes_now(self, catalog):
        from notifications.models import NotificationDelivery

        assert ask("orchestration/subscribe", SUBSCRIBE, params={"trigger": "true"}).status == 201
        assert NotificationDelivery.objects.get().receiver == "Car1"


class ManagementTests:
    def test_store_operations_for_an_operator(self, catalog):
        query = ask("orchestration/management/store/query", {}, system="Sysop")
        assert query.status == 200 and query.payload["count"] == 1
        rule_id = query.payload["entries"][0]["id"]
        created = ask("orchestration/management/store/create",
                      {"entries": [{"consumer": "Car2", "serviceInstanceId": SHARED,
                                    "priority": 1}]},
                      system="Sysop")
        assert created.status == 201, created.payload
        modified = ask("orchestration/management/store/modify-priorities",
                       {rule_id: 5}, system="Sysop")
        assert modified.status == 200, modified.payload
        removed = ask("orchestration/management/store/remove", [rule_id], system="Sysop")
        assert (removed.status, removed.payload) == (200, "")
        assert list(Rule.objects.values_list("consumer", flat=True)) == ["Car2"]

    def test_management_is_guarded_as_over_http(self, catalog):
        refused = ask("orchestration/management/store/query", {}, system="Car1")
        assert refused.status == 403 and refused.receiver == "Car1"
        assert refused.payload["exceptionType"] == "FORBIDDEN"
        assert refused.payload["origin"] == BASE + "orchestration/management/store/query"

    def test_history_and_config(self, catalog):
        ask("orchestration/pull", {})
        history = ask("orchestration/management/history/query", {}, system="Sysop")
        assert history.status == 200 and history.payload["count"] >= 1
        config = ask("general/management/get-config", ["max.page.size"], system="Sysop")
        assert config.status == 200 and "max.page.size" in config.payload["map"]


class ErrorTests:
    def test_no_identity_is_a_401_without_receiver(self):
        reply = ask("orchestration/pull", {}, system=None)
        assert reply.status == 401 and reply.receiver is None
        assert reply.payload["exceptionType"] == "AUTH"
        assert reply.payload["origin"] == BASE + "orchestration/pull"

    def test_a_bad_body_is_the_http_operations_400(self):
        reply = ask("orchestration/pull", {"serviceRequirement": "x"})
        assert reply.status == 400 and reply.payload["exceptionType"] == "INVALID_PARAMETER"

    @pytest.mark.parametrize("operation, payload", [
        ("orchestration/unsubscribe", None), ("orchestration/unsubscribe", 5),
        ("orchestration/management/store/remove", "not-a-list"),
        ("orchestration/management/store/remove", [1, 2]),
    ])
    def test_a_payload_of_the_wrong_shape_is_a_400(self, operation, payload):
        reply = ask(operation, payload, system="Sysop")
        assert reply.status == 400
        assert reply.payload["errorMessage"].startswith("Could not parse payload")

    def test_an_unknown_operation_is_a_400(self):
        reply = ask("orchestration/teleport", {})
        assert reply.status == 400 and reply.payload["errorMessage"] == \
            "Unknown operation: teleport"


class IdentityPolicyTests:
    def test_an_identity_token_identifies_the_requester(self, catalog, settings):
        from identity.services import identity_token_issue

        settings.AUTHENTICATION_POLICY = "token"
        token, _ = identity_token_issue(system_name="Car1", operator=False, ttl_seconds=60)
        template = {"responseTopic": "r", "authentication": f"IDENTITY-TOKEN//{token}",
                    "payload": {}}
        reply = answer(BASE + "orchestration/pull", parse_request(json.dumps(template).encode()))
        assert (reply.status, reply.receiver) == (200, "Car1")


class CertificatePolicyTests:
    @pytest.fixture(autouse=True)
    def certificate_policy(self, settings, cloud_certificates):
        settings.AUTHENTICATION_POLICY = "certificate"
        settings.MANAGEMENT_POLICY = "sysop-only"
        settings.TLS_CA_FILE = str(cloud_certificates / "ca.pem")
        settings.TLS_CERT_FILE = str(cloud_certificates / "SimpleStoreServiceOrchestration.pem")
        settings.TLS_KEY_FILE = str(cloud_certificates / "SimpleStoreServiceOrchestration.key")

    def ask(self, operation: str, payload, authentication):
        template = {"traceId": "t", "responseTopic": "r", "payload": payload}
        if authentication is not None:
            template["authentication"] = authentication
        return answer(BASE + operation, parse_request(json.dumps(template).encode()))

    def test_the_presented_certificate_identifies_the_requester(self, catalog,
                                                                 cloud_certificates):
        car = presented(cloud_certificates / "Car1")
        pulled = self.ask("orchestration/pull", PULL_BODY, car)
        assert (pulled.status, pulled.receiver) == (200, "Car1")
        assert [r["serviceInstanceId"] for r in pulled.payload["results"]] == [SHARED]
        refused = self.ask("orchestration/management/store/query", {}, car)
        assert (refused.status, refused.receiver) == (403, "Car1")
        managed = self.ask("orchestration/management/store/query", {},
                           presented(cloud_certificates / "Sysop"))
        assert (managed.status, managed.receiver) == (200, "Sysop")
        assert managed.payload["count"] == 1

    @pytest.mark.parametrize("holder, status, message", [
        (None, 401, "No authentication key has been provided"),
        ("SYSTEM//Car1", 401, "Invalid authentication key has been provided"),
        ("untrusted/Impostor", 401, "Invalid authentication key has been provided"),
        ("Stranger", 403, f"Unauthorized access: {BASE}orchestration/pull, from foreign cloud"),
        ("Gadget", 403, f"Unauthorized access: {BASE}orchestration/pull, invalid certificate "
                        "type: DEVICE"),
    ])
    def test_who_is_refused_and_with_what(self, cloud_certificates, holder, status, message):
        authentication = holder if holder is None or "//" in holder else \
            presented(cloud_certificates / holder)
        reply = self.ask("orchestration/pull", {"serviceRequirement": "not even valid"},
                         authentication)  # identity is checked before the payload, as HTTP
        assert (reply.status, reply.payload["errorMessage"]) == (status, message)
        assert reply.payload["origin"] == BASE + "orchestration/pull"
        assert reply.receiver is None
