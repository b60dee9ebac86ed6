"""Where the MQTT interface answers (issue 29, item 1), against the real Mosquitto: an operator
tool's reply topic received a 401 from an anonymous sender with the tool's traceId, and any
requester could have answers published on another system's notify topic or on the
interface's own request topics. Each is now only logged; nothing reaches the topic."""
import json

import pytest
from rest_framework.test import APIClient

from mqtt_api.front_door import Answer
from mqtt_api.messages import parse_request
from mqtt_api.response_topics import answer_refusal
from tests.concurrency import wait_for
from tests.factories import make_subscription
from tests.mqtt_api.clients import PULL_BODY, Api, Caller
from tests.subscriptions.helpers import mqtt_notify, subscription_body

pytestmark = pytest.mark.django_db(transaction=True)


def logged(api: Api, reason: str, count: int = 1) -> None:
    wait_for(lambda: api.log.read_text().count(f"not published: {reason}") >= count,
             what=f"the interface to log {count} answer(s) not published: {reason}")


class UnauthenticatedRequestTests:
    def test_an_anonymous_request_gets_no_answer_on_its_response_topic(self, catalog, broker,
                                                                        base, tmp_path):
        port, _ = broker
        api, tool = Api(port, base, tmp_path / "api.log"), Caller(port, base)
        try:
            # A stranger names the operator tool's reply topic and its traceId.
            tool.send("orchestration/pull", PULL_BODY, trace="tool-7", authentication=None)
            tool.send("orchestration/management/store/query", {}, trace="tool-7",
                      authentication="SYSTEM//")
            logged(api, "no requester was identified", 2)
            tool.send("orchestration/pull", PULL_BODY, trace="bad-qos", qosRequirement=7)
            wait_for(lambda: "Unknown MQTT QoS value: 7" in api.log.read_text(),
                     what="the bad template to be logged")
            assert tool.ask("orchestration/pull", PULL_BODY, trace="own")["traceId"] == "own"
            assert tool.answers.empty()  # only the authenticated request was answered
        finally:
            tool.close()
            api.stop()


class ResponseTopicTests:
    def test_no_answer_goes_to_another_systems_notify_topic(self, catalog, broker, base,
                                                            tmp_path):
        port, _ = broker
        make_subscription(APIClient(), subscription_body(notify=mqtt_notify("plant/car2")),
                          consumer="Car2")
        api = Api(port, base, tmp_path / "api.log")
        car2 = Caller(port, base, reply_topic="plant/car2")
        try:
            car2.send("orchestration/pull", PULL_BODY, system="Car1", responseTopic="plant/car2")
            logged(api, "its response topic is refused: it is another system's notify topic")
            # Car2 itself may be answered on its own notify topic.
            reply = car2.ask("orchestration/pull", PULL_BODY, system="Car2")
            assert (reply["status"], reply["receiver"]) == (200, "Car2")
            assert car2.answers.empty()
        finally:
            car2.close()
            api.stop()

    def test_no_answer_goes_to_the_interfaces_own_request_topics(self, catalog, broker, base,
                                                                tmp_path):
        port, _ = broker
        request_topic = base + "orchestration/pull"
        api = Api(port, base, tmp_path / "api.log")
        listener = Caller(port, base, reply_topic=request_topic)
        try:
            listener.send("orchestration/pull", PULL_BODY, responseTopic=request_topic)
            logged(api, "its response topic is refused: it is one of the MQTT interface's "
                        "own topics")
            received = []
            while not listener.answers.empty():
                received.append(listener.answers.get())
            assert [message for message in received if "status" in message] == []
            assert len(api.log.read_text().split("not published")) == 2  # no request loop
        finally:
            listener.close()
            api.stop()



class SystemTopicRootTests:
    def test_answers_go_only_under_the_requesters_root(self, settings):
        settings.MQTT_SYSTEM_TOPIC_ROOT = "arrowhead/systems/"

        def refusal(topic: str) -> str | None:
            request = parse_request(json.dumps({"responseTopic": topic}).encode())
            return answer_refusal(request, Answer(200, {}, "Car1"))

        assert refusal("arrowhead/systems/Car1/replies") is None
        for topic in ("arrowhead/systems/Car2/replies", "plant/replies"):
            assert refusal(topic) == ("its response topic is refused: it is not under "
                                      "arrowhead/systems/Car1/ (MQTT_SYSTEM_TOPIC_ROOT)")
