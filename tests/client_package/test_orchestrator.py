"""The installed client's HTTP operations against the real service: management of instances
and rules, pull, subscribe and unsubscribe, token verification, and the error envelope as
`ServiceError`."""
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from store.models import Rule, ServiceInstance
from subscriptions.models import Subscription
from tests.client_package.service import client_service
from tests.ports import reserved_port

pytestmark = pytest.mark.django_db(transaction=True)

INSTANCE = "ClientProvider|clientTemperature|1.0.0"
CREATE_ORIGIN = "POST /serviceorchestration/orchestration/mgmt/simple-store/create"


@pytest.fixture
def sorch(client_package):
    return client_package.module()


@pytest.fixture
def url(tmp_path):
    with client_service(tmp_path / "gunicorn.log") as url:
        yield url


def register(sorch, operator, **fields) -> dict:
    instance = sorch.http_instance(provider="ClientProvider", service="clientTemperature",
                                   version="1.0.0", address="127.0.0.1", port=8080,
                                   base_path="/temperature",
                                   operations={"query": ("GET", "/query")}, **fields)
    return operator.instances_create([instance])


class OrchestratorTests:
    def test_it_manages_instances_and_rules_and_pulls(self, sorch, url):
        operator = sorch.Orchestrator(url, system="Sysop")
        [created] = register(sorch, operator, metadata={"unit": "celsius"})["entries"]
        assert created["instanceId"] == INSTANCE
        found = operator.instances_query({"providerNames": ["ClientProvider"]})
        assert (found["count"], found["entries"][0]["metadata"]) == (1, {"unit": "celsius"})

        [rule] = operator.rules_create([{"consumer": "ClientConsumer",
                                         "serviceInstanceId": INSTANCE,
                                         "priority": 1}])["entries"]
        assert (rule["consumer"], rule["createdBy"]) == ("ClientConsumer", "Sysop")
        assert operator.rules_query({"consumerNames": ["ClientConsumer"]})["count"] == 1
        [modified] = operator.rules_modify_priorities({rule["id"]: 7})["entries"]
        assert (modified["id"], modified["priority"]) == (rule["id"], 7)
        assert Rule.objects.get().priority == 7

        consumer = sorch.Orchestrator(url, system="ClientConsumer")
        response = consumer.pull(sorch.orchestration_request("clientTemperature"))
        [result] = response["results"]
        assert result["serviceInstanceId"] == INSTANCE
        assert sorch.describe_result(result) == (
            f"{INSTANCE}  generic_http 127.0.0.1:8080/temperature policy=NONE  "
            'metadata={"unit": "celsius"}')

        assert operator.rules_remove([rule["id"]]) is None
        assert operator.rules_query()["count"] == 0
        operator.instances_remove([INSTANCE])
        assert operator.instances_query()["count"] == 0
        assert not ServiceInstance.objects.exists()

    def test_it_subscribes_and_unsubscribes(self, sorch, url):
        consumer = sorch.Orchestrator(url, system="ClientConsumer")
        request = sorch.orchestration_request("clientTemperature")
        subscription_id = consumer.subscribe(request, "test/client/subscribe", duration=600)
        stored = Subscription.objects.get(id=subscription_id)
        assert stored.notify_properties == {"topic": "test/client/subscribe"}
        assert consumer.unsubscribe(subscription_id) is True
        assert not Subscription.objects.filter(id=subscription_id).exists()
        assert consumer.unsubscribe(subscription_id) is False  # 204: no such subscription

    def test_a_provider_verifies_the_tokens_pull_issued(self, sorch, url):
        operator = sorch.Orchestrator(url, system="Sysop")
        register(sorch, operator, policy="TIME_LIMITED_TOKEN_AUTH")
        operator.rules_create([{"consumer": "ClientConsumer", "serviceInstanceId": INSTANCE,
                                "priority": 1}])
        consumer = sorch.Orchestrator(url, system="ClientConsumer")
        [result] = consumer.pull(sorch.orchestration_request(
            "clientTemperature", operations=["query"]))["results"]
        token = result["authorizationTokens"]["TIME_LIMITED_TOKEN_AUTH"]["query"]["token"]
        provider = sorch.Orchestrator(url, system="ClientProvider")
        answer = provider.verify_token(token)
        assert (answer["verified"], answer["consumer"], answer["scope"]) == (
            True, "ClientConsumer", "query")
        assert provider.verify_token("forged") == {"verified": False}

    def test_an_error_answer_is_a_service_error_with_the_envelopes_fields(self, sorch, url):
        operator = sorch.Orchestrator(url, system="Sysop")
        with pytest.raises(sorch.ServiceError) as refused:
            operator.rules_create([{"consumer": "ClientConsumer", "serviceInstanceId": INSTANCE,
                                    "priority": 0}])
        error = refused.value
        assert (error.status, error.error_code, error.exception_type, error.error_message,
                error.origin) == (400, 400, "INVALID_PARAMETER", "Priority should be positive",
                                  CREATE_ORIGIN)
        assert str(error) == f"400 INVALID_PARAMETER: Priority should be positive ({CREATE_ORIGIN})"
        assert isinstance(error, sorch.ClientError)

        with pytest.raises(sorch.ServiceError) as forbidden:
            sorch.Orchestrator(url, system="ClientConsumer").rules_query()
        assert (forbidden.value.status, forbidden.value.exception_type,
                forbidden.value.error_message) == (
            403, "FORBIDDEN", "Requester has no management permission")


class ProxyPage(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - the handler's name
        body = b"<html><body>\n  <h1>502 Bad Gateway</h1>\n</body></html>"
        self.send_response(502)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


class OrchestratorFailureTests:
    def test_an_answer_that_is_no_envelope_keeps_its_status_and_text(self, client_package):
        sorch = client_package.module()
        server = ThreadingHTTPServer(("127.0.0.1", reserved_port()), ProxyPage)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            with pytest.raises(sorch.ServiceError) as failed:
                sorch.Orchestrator(f"http://127.0.0.1:{server.server_port}",
                                   system="Sysop").pull({})
        finally:
            server.shutdown()
            server.server_close()
        error = failed.value
        assert (error.status, error.error_code, error.exception_type, error.origin) == (
            502, None, None, None)
        assert error.error_message == "<html><body> <h1>502 Bad Gateway</h1> </body></html>"
        assert str(error) == ("502 Bad Gateway: <html><body> <h1>502 Bad Gateway</h1> "
                              "</body></html>")

    def test_an_unreachable_service_is_a_client_error(self, client_package):
        sorch = client_package.module()
        port = reserved_port()
        with pytest.raises(sorch.ClientError) as failed:
            sorch.Orchestrator(f"http://127.0.0.1:{port}").rules_query()
        assert not isinstance(failed.value, sorch.ServiceError)
        assert str(failed.value) == f"cannot reach http://127.0.0.1:{port}: Connection refused"
        assert "\n" not in str(failed.value)
