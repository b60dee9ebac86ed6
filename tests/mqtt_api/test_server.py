"""The MQTT interface's process (`manage.py mqtt_api`) against the real Mosquitto: a
consumer that speaks only MQTT pulls, subscribes and unsubscribes; bad input is answered or
dropped without stopping the loop; two processes on a shared subscription answer each
request once; a broker restart is survived (a throw-away Mosquitto on its own port)."""
import json
import re

import pytest

from mqtt_api.operations import OPERATIONS, served_topics
from tests.endpoints import mosquitto
from tests.mqtt_api.clients import PULL_BODY, SHARED, Api, Caller
from tests.ports import reserved_port

pytestmark = pytest.mark.django_db(transaction=True)


class RoundTripTests:
    def test_a_consumer_pulls_subscribes_and_unsubscribes_over_mqtt(self, catalog, broker,
                                                                    base, tmp_path):
        port, _ = broker
        api, caller = Api(port, base, tmp_path / "api.log"), Caller(port, base)
        try:
            pulled = caller.ask("orchestration/pull", PULL_BODY, trace="p-1")
            assert (pulled["status"], pulled["traceId"], pulled["receiver"]) == (200, "p-1",
                                                                                "Car1")
            assert [r["serviceInstanceId"] for r in pulled["payload"]["results"]] == [SHARED]
            subscribed = caller.ask("orchestration/subscribe", {
                **{"orchestrationRequest": PULL_BODY},
                "notifyInterface": {"protocol": "MQTT", "properties": {"topic": "car1/r"}}})
            assert subscribed["status"] == 201
            removed = caller.ask("orchestration/unsubscribe", subscribed["payload"])
            assert (removed["status"], removed["payload"]) == (200, "")
            refused = caller.ask("orchestration/management/store/query", {})
            assert refused["status"] == 403
            assert refused["payload"]["origin"] == base + "orchestration/management/store/query"
        finally:
            caller.close()
            api.stop()


class EveryOperationTests:
    def test_every_operation_round_trips_through_the_broker(self, catalog, broker, base,
                                                            tmp_path):
        port, _ = broker
        api, caller = Api(port, base, tmp_path / "api.log"), Caller(port, base)
        subscription = {"orchestrationRequest": PULL_BODY, "notifyInterface": {
            "protocol": "MQTT", "properties": {"topic": "car1/r"}}}
        answered = {}

        def call(operation: str, payload, system: str = "Sysop", **kwargs) -> dict:
            reply = caller.ask(operation, payload, system=system, **kwargs)
            assert reply["status"] < 300, (operation, reply)
            answered[operation] = reply["status"]
            return reply["payload"]

        try:
            call("orchestration/pull", PULL_BODY, system="Car1")
            own = call("orchestration/subscribe", subscription, system="Car1",
                       params={"trigger": "false"})
            call("orchestration/unsubscribe", own, system="Car1")
            store = "orchestration/management/store/"
            rule = call(store + "query", {})["entries"][0]["id"]
            call(store + "create", {"entries": [{"consumer": "Car2", "serviceInstanceId": SHARED,
                                                 "priority": 1}]})
            call(store + "modify-priorities", {rule: 3})
            call(store + "remove", [rule])
            push = "orchestration/management/push/"
            pushed = call(push + "subscribe", {"subscriptions": [
                {**subscription, "targetSystemName": "Car1"}]})["entries"][0]["id"]
            call(push + "query", {})
            call(push + "trigger", {"subscriptionIds": [pushed]})
            call(push + "unsubscribe", [pushed])
            call("orchestration/management/history/query", {})
            call("general/management/get-log", {})
            call("general/management/get-config", ["max.page.size"])
        finally:
            caller.close()
            api.stop()
        assert set(answered) == set(served_topics())  # every operation, each answered 2xx


class FlexibleStoreTests:
    def test_the_flexible_store_is_managed_over_mqtt_under_its_strategy(self, catalog, broker,
                                                                         base, tmp_path):
        port, _ = broker
        api = Api(port, base, tmp_path / "api.log", ORCHESTRATION_STRATEGY="flexible-store")
        caller = Caller(port, base)
        store = "orchestration/management/flexible-store/"
        try:
            created = caller.ask(store + "create", {"entries": [
                {"consumer": "Car1", "providerMetadataRequirements": [{}],
                 "serviceDefinition": "temperatureInfo", "priority": 1}]}, system="Sysop")
            assert created["status"] == 201, created
            [rule] = created["payload"]["entries"]
            pulled = caller.ask("orchestration/pull", PULL_BODY)
            assert [r["serviceInstanceId"] for r in pulled["payload"]["results"]] == [SHARED]
            queried = caller.ask(store + "query", {}, system="Sysop")
            assert [e["id"] for e in queried["payload"]["entries"]] == [rule["id"]]
            removed = caller.ask(store + "remove", [rule["id"]], system="Sysop")
            assert removed["status"] == 200
            assert "orchestration/management/store/create" not in api.log.read_text()
        finally:
            caller.close()
            api.stop()

    def test_each_strategy_subscribes_its_own_store_topics(self, settings):
        assert "orchestration/management/store/create" in served_topics()
        assert "orchestration/management/flexible-store/create" not in served_topics()
        settings.ORCHESTRATION_STRATEGY = "flexible-store"
        assert "orchestration/management/store/create" not in served_topics()
        assert {"orchestration/management/flexible-store/" + name
                for name in ("query", "create", "remove")} <= set(served_topics())
        assert set(OPERATIONS) == {topic for strategy in ("simple-store", "flexible-store")
                                   for topic in _served_under(settings, strategy)}


def _served_under(settings, strategy: str) -> list[str]:
    settings.ORCHESTRATION_STRATEGY = strategy
    return served_topics()


class BadInputTests:
    def test_bad_messages_are_answered_or_dropped_and_the_loop_goes_on(self, catalog, broker,
                                                                       base, tmp_path):
        port, _ = broker
        api, caller = Api(port, base, tmp_path / "api.log", MAX_REQUEST_BODY_BYTES="100000"), \
            Caller(port, base)
        try:
            caller.send("orchestration/pull", raw=b"{not json")
            caller.send("orchestration/pull", raw=b"x" * 3_000_000)  # several megabytes
            caller.send("orchestration/pull", raw=json.dumps({"payload": {}}).encode())
            caller.send("orchestration/pull", qosRequirement=7)  # who sent it? not answered
            typed = caller.ask("orchestration/pull", {"serviceRequirement": []})
            assert typed["status"] == 400
            # Refused before its requester is identified: logged, not published.
            caller.send("orchestration/unsubscribe", 5, trace="not-an-id")
            for n in range(50):  # a flood: every one answered
                caller.send("orchestration/pull", PULL_BODY, trace=f"flood-{n}")
            traces = {caller.answers.get(timeout=30)["traceId"] for _ in range(50)}
            assert traces == {f"flood-{n}" for n in range(50)}
            assert caller.ask("orchestration/pull", PULL_BODY)["status"] == 200
            assert caller.answers.empty()  # the dropped ones were not answered
            log = api.log.read_text()
            assert "dropped a request of 3000000 bytes" in log
            assert log.count("dropped a message") == 2  # the unparsable one, QoS 7
            assert "Unknown MQTT QoS value: 7" in log
            assert "answered 400 (traceId 'not-an-id'), not published: no requester was " \
                "identified" in log
            assert "named no response topic" in log
        finally:
            caller.close()
            api.stop()


class ScaleOutTests:
    def test_two_processes_share_the_requests_and_answer_each_once(self, catalog, broker, base,
                                                                   tmp_path):
        port, _ = broker
        first = Api(port, base, tmp_path / "first.log")
        second = Api(port, base, tmp_path / "second.log")
        caller = Caller(port, base)
        try:
            for n in range(40):
                caller.send("orchestration/pull", PULL_BODY, trace=f"r-{n}")
            traces = [caller.answers.get(timeout=30)["traceId"] for _ in range(40)]
            assert sorted(traces) == sorted(f"r-{n}" for n in range(40))
            first.stop()
            second.stop()
            # What each process published, counted by itself: a request answered twice (by
            # both, or twice by one) would make more than 40.
            published = [int(n) for api in (first, second) for n in re.findall(
                r"stopped \((\d+) answers published\)", api.log.read_text())]
            assert len(published) == 2 and sum(published) == 40, published
            assert all(published), published  # both took a share
        finally:
            caller.close()
            first.stop()
            second.stop()

    def test_a_broker_restart_is_survived(self, catalog, base, tmp_path):
        port = reserved_port()
        with mosquitto(port):
            api = Api(port, base, tmp_path / "api.log")
        try:
            with mosquitto(port):
                api.wait_ready(2)  # reconnected and subscribed again
                caller = Caller(port, base)
                try:
                    assert caller.ask("orchestration/pull", PULL_BODY)["status"] == 200
                finally:
                    caller.close()
        finally:
            api.stop()
