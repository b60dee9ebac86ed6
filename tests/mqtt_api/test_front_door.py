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
from tests.store.helpers import instance_body, make_instances, make_rules

pytestmark = pytest.mark.django_db(transaction=True)

BASE = "arrowhead/serviceorchestration/"
SHARED = "Shared|temperatureInfo|1.0.0"


def ask(operation: str, payload=None, *, system: str | None = "Car1", params=None):
    template = {"traceId": "t-1", "responseTopic": "reply/here", "qosRequirement": 1,
                "payload": payload}
    if system is not None:
        template["authentication"] = f"SYSTEM//{system}"
    if params is not None:
        template["params"] = params
    return answer(BASE + operation, parse_request(json.dumps(template).encode()))


@pytest.fixture
def catalog():
    make_instances(instance_body("Shared", metadata={"v": 1}))
    make_rules(("Car1", SHARED, 1))


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

    def test_no_certificate_identity_over_mqtt(self, catalog, settings):
        settings.AUTHENTICATION_POLICY = "certificate"
        reply = ask("orchestration/pull", {})
        assert reply.status == 401 and reply.receiver is None
        assert reply.payload["errorMessage"] == \
            f"Unauthenticated access attempt: {BASE}orchestration/pull"  # not an internal URL


class TemplateTests:
    @pytest.mark.parametrize("raw", [b"", b"{", b"[1]", b"\xff\xfe", b"null",
                                     b"[" * 100000 + b"]" * 100000])
    def test_an_unreadable_message_has_no_topic_to_answer(self, raw):
        with pytest.raises(TemplateError) as refused:
            parse_request(raw)
        assert refused.value.response_topic is None

    @pytest.mark.parametrize("template, message", [
        ({"qosRequirement": 3}, "Unknown MQTT QoS value: 3"),
        ({"qosRequirement": "1"}, "Unknown MQTT QoS value: 1"),
        ({"authentication": 5}, "Invalid authentication info"),
        ({"params": {"trigger": True}}, "Invalid message template. Reason: params must map "
                                        "names to strings"),
    ])
    def test_a_bad_field_is_answered_on_the_response_topic(self, template, message):
        with pytest.raises(TemplateError) as refused:
            parse_request(json.dumps({"responseTopic": "r/t", "traceId": "x",
                                      **template}).encode())
        assert (refused.value.message, refused.value.response_topic,
                refused.value.trace_id) == (message, "r/t", "x")

    @pytest.mark.parametrize("topic", ["r/#", "r/+/x", "", 5, "a\x00b"])
    def test_a_response_topic_must_be_a_plain_topic_name(self, topic):
        assert parse_request(json.dumps({"responseTopic": topic}).encode()).response_topic \
            is None

    def test_a_missing_qos_means_qos_0(self):
        assert parse_request(b'{"responseTopic": "r"}').qos == 0

    def test_the_response_leaves_out_what_has_no_value(self):
        assert json.loads(response_bytes(status=204, trace_id=None, receiver=None,
                                         payload=None)) == {"status": 204, "payload": ""}
