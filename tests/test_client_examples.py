"""The runnable client examples in docs/examples (consumer, provider, the `sorch.py` command
line) against the real service: gunicorn on loopback with the test database, no Celery broker
(the web process evaluates subscriptions and sends pushes), the real Mosquitto."""
import json
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from identity.services import identity_token_issue
from subscriptions.models import Subscription
from tests import services
from tests.ports import reserved_port
from tests.web_server import gunicorn
from tests.worker import ROOT

pytestmark = pytest.mark.django_db(transaction=True)

EXAMPLES = ROOT / "docs" / "examples"
PATIENCE = 60


def run(example: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(EXAMPLES / example), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=PATIENCE)


def start(example: str, log: Path, *args: str) -> subprocess.Popen:
    with log.open("w") as output:
        return subprocess.Popen([sys.executable, str(EXAMPLES / example), *args], cwd=ROOT,
                                stdout=output, stderr=subprocess.STDOUT)


def wait_for_line(process: subprocess.Popen, log: Path, start_of_line: str) -> str:
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:
        for line in log.read_text().splitlines():
            if line.startswith(start_of_line):
                return line
        if process.poll() is not None:
            break
        time.sleep(0.1)
    pytest.fail(f"no line {start_of_line!r} from {process.args[1]}:\n{log.read_text()}",
                pytrace=False)


def stop(process: subprocess.Popen) -> int:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=PATIENCE)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()


@pytest.fixture
def names() -> dict[str, str]:
    suffix = uuid.uuid4().hex[:8]
    return {"consumer": f"ExampleConsumer{suffix}", "provider": f"ExampleProvider{suffix}",
            "service": f"exampleTemperature{suffix}"}


def serve(tmp_path: Path, names: dict[str, str], policy: str) -> Iterator[str]:
    services.require_mqtt()
    env = {"CELERY_BROKER_URL": "", "MQTT_BROKER_URL": settings.MQTT_BROKER_URL,
           "AUTHENTICATION_POLICY": policy, "MANAGEMENT_POLICY": "permission",
           # The provider registers its own instance: a management operation.
           "MANAGEMENT_WHITELIST": names["provider"], "SUBSCRIPTION_QUIET_SECONDS": "0.05",
           "SERVICE_REGISTRY_URL": None, "METRICS_ENABLED": "false"}
    with gunicorn(env, tmp_path / "gunicorn.log") as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture
def url(tmp_path: Path, names: dict[str, str]) -> Iterator[str]:
    yield from serve(tmp_path, names, "declared")


@pytest.fixture
def token_policy_url(tmp_path: Path, names: dict[str, str]) -> Iterator[str]:
    yield from serve(tmp_path, names, "token")


class ClientExamplesTests:
    def test_it_runs_provider_operator_and_consumer_end_to_end(self, url, names, tmp_path):
        provider, consumer, service = names["provider"], names["consumer"], names["service"]
        instance_id = f"{provider}|{service}|1.0.0"
        provider_port = str(reserved_port())
        provider_args = ["--url", url, "--system", provider, "--service", service,
                         "--port", provider_port]
        serving = start("provider.py", tmp_path / "provider.log", *provider_args,
                        "--metadata", "building=a", "--serve")
        try:
            assert wait_for_line(serving, tmp_path / "provider.log", "registered") == (
                f"registered {instance_id}")
            wait_for_line(serving, tmp_path / "provider.log", "serving")

            operator = ["--url", url, "--system", "Sysop"]
            created = run("sorch.py", *operator, "rules", "create", "--consumer", consumer,
                          "--instance", instance_id, "--priority", "1")
            assert (created.returncode, created.stderr) == (0, "")
            assert created.stdout.endswith("1 rule(s) created\n")
            listed = run("sorch.py", *operator, "rules", "list", "--consumer", consumer)
            assert listed.returncode == 0
            assert f"{consumer}  {instance_id}  priority=1" in listed.stdout
            instances = run("sorch.py", *operator, "instances", "list", "--provider", provider)
            assert instances.returncode == 0
            assert f'{instance_id}  expiresAt=None  metadata={{"building": "a"}}' in (
                instances.stdout)

            pulled = run("sorch.py", "--url", url, "--system", consumer, "--json", "pull",
                         "--service", service, "--operation", "query")
            assert pulled.returncode == 0, pulled.stderr
            [result] = json.loads(pulled.stdout)["results"]
            assert result["serviceInstanceId"] == instance_id
            token = result["authorizationTokens"]["TIME_LIMITED_TOKEN_AUTH"]["query"]["token"]

            verified = run("provider.py", *provider_args, "--no-register", f"--verify={token}")
            assert verified.returncode == 0, verified.stderr
            assert verified.stdout.startswith(
                f"token verified: consumer={consumer} service={service} scope=query ")
            refused = run("provider.py", *provider_args, "--no-register", "--verify", "forged")
            assert (refused.returncode, refused.stdout) == (0, "token not verified\n")
            # tokens are URL-safe base64, so one in 64 begins with '-': the '=' form takes it
            dashed = run("provider.py", *provider_args, "--no-register", "--verify=-forged")
            assert (dashed.returncode, dashed.stdout) == (0, "token not verified\n")

            topic = f"test/examples/{uuid.uuid4().hex}"
            consumer_log = tmp_path / "consumer.log"
            listening = start("consumer.py", consumer_log, "--url", url, "--system", consumer,
                              "--mqtt", settings.MQTT_BROKER_URL, "--service", service,
                              "--topic", topic, "--call", "query", "--max-pushes", "1",
                              "--timeout", str(PATIENCE))
            try:
                subscribed = wait_for_line(listening, consumer_log, "subscribed ")
                subscription_id = subscribed.split()[1]
                output = consumer_log.read_text()
                assert output.startswith("pull: 1 result(s)\n")
                assert "call query: 200 " in output and f'"consumer": "{consumer}"' in output

                # The provider's instance changes: the consumer is pushed the new result.
                changed = run("provider.py", *provider_args, "--metadata", "building=b")
                assert (changed.returncode, changed.stdout) == (0, f"registered {instance_id}\n")
                assert listening.wait(timeout=PATIENCE) == 0
            finally:
                stop(listening)
            output = consumer_log.read_text()
            assert "push: 1 result(s)\n" in output
            assert '"building": "b"' in output.split("push: ")[1]
            assert output.endswith(f"unsubscribed {subscription_id}\n")
            assert not Subscription.objects.filter(id=subscription_id).exists()
        finally:
            assert stop(serving) == 0
        assert (tmp_path / "provider.log").read_text().endswith(f"removed {instance_id}\n")

    def test_the_command_line_registers_subscribes_listens_and_cleans_up(self, url, names,
                                                                          tmp_path):
        consumer, service = names["consumer"], names["service"]
        instance_id = f"{names['provider']}|{service}|2.0.0"
        operator = ["--url", url, "--system", "Sysop"]
        registered = run("sorch.py", *operator, "instances", "register", "--provider",
                         names["provider"], "--service", service, "--version", "2",
                         "--port", "8080", "--base-path", "/temperature",
                         "--operation", "query=GET:/query", "--metadata", "unit=celsius")
        assert (registered.returncode, registered.stderr) == (0, "")
        assert registered.stdout.endswith("1 instance(s) registered\n")
        created = run("sorch.py", *operator, "--json", "rules", "create", "--consumer",
                      consumer, "--instance", instance_id)
        [rule] = json.loads(created.stdout)["entries"]

        topic = f"test/examples/{uuid.uuid4().hex}"
        log = tmp_path / "listen.log"
        listening = start("sorch.py", log, "--url", url, "--system", consumer, "--mqtt",
                          settings.MQTT_BROKER_URL, "subscribe", "--service", service,
                          "--topic", topic, "--trigger", "--listen", "--max-pushes", "1",
                          "--timeout", str(PATIENCE))
        try:
            assert listening.wait(timeout=PATIENCE) == 0
        finally:
            stop(listening)
        lines = log.read_text().splitlines()
        assert lines[0].startswith("subscribed ") and lines[0].endswith(f" (topic {topic})")
        assert lines[1:] == ["push: 1 result(s)",
                             f"{instance_id}  generic_http 127.0.0.1:8080/temperature "
                             f'policy=NONE  metadata={{"unit": "celsius"}}']
        subscription_id = lines[0].split()[1]
        assert Subscription.objects.filter(id=subscription_id).exists()  # --listen keeps it

        unsubscribed = run("sorch.py", "--url", url, "--system", consumer, "unsubscribe",
                           subscription_id)
        assert (unsubscribed.returncode, unsubscribed.stdout) == (
            0, f"unsubscribed {subscription_id}\n")
        assert not Subscription.objects.filter(id=subscription_id).exists()
        removed = run("sorch.py", *operator, "rules", "remove", rule["id"])
        assert (removed.returncode, removed.stdout) == (
            0, "removed 1 id(s) (unknown ids are ignored)\n")
        listed = run("sorch.py", *operator, "rules", "list", "--consumer", consumer)
        assert listed.stdout == "0 rule(s)\n"

    def test_a_refused_request_prints_the_services_message_and_exits_1(self, url, names):
        answer = run("sorch.py", "--url", url, "--system", "Sysop", "rules", "create",
                     "--consumer", names["consumer"], "--instance", "P|svc|1.0.0",
                     "--priority", "0")
        assert answer.returncode == 1
        assert answer.stdout == ""
        assert answer.stderr == ("error: 400 INVALID_PARAMETER: Priority should be positive "
                                 "(POST /serviceorchestration/orchestration/mgmt/simple-store/"
                                 "create)\n")

    def test_a_refused_identity_prints_the_services_message_and_exits_1(self, url, names):
        answer = run("sorch.py", "--url", url, "--system", names["consumer"], "rules", "list")
        assert answer.returncode == 1
        assert answer.stderr == ("error: 403 FORBIDDEN: Requester has no management permission "
                                 "(POST /serviceorchestration/orchestration/mgmt/simple-store/"
                                 "query)\n")

    def test_it_identifies_with_an_identity_token(self, token_policy_url, names):
        raw, _ = identity_token_issue(system_name="ExampleOperator", operator=True,
                                      ttl_seconds=600)
        listed = run("sorch.py", "--url", token_policy_url, f"--token={raw}", "rules", "list",
                     "--consumer", names["consumer"])
        assert (listed.returncode, listed.stdout) == (0, "0 rule(s)\n")
        refused = run("sorch.py", "--url", token_policy_url, "--token", "unknown", "rules",
                      "list")
        assert refused.returncode == 1
        assert refused.stderr == ("error: 401 AUTH: Invalid authorization header (POST "
                                  "/serviceorchestration/orchestration/mgmt/simple-store/"
                                  "query)\n")


def assert_refused_connection(answer: subprocess.CompletedProcess, port: int) -> None:
    """Exit code 1 and one line on stderr, no traceback."""
    assert (answer.returncode, answer.stdout) == (1, "")
    assert answer.stderr == f"error: cannot reach http://127.0.0.1:{port}: Connection refused\n"


class ClientExamplesUnreachableTests:
    def test_an_unreachable_service_is_one_line_and_exit_1(self):
        port = reserved_port()
        assert_refused_connection(run("sorch.py", "--url", f"http://127.0.0.1:{port}",
                                      "--system", "Sysop", "rules", "list"), port)

    def test_an_unreachable_broker_is_one_line_and_exit_1(self):
        port = reserved_port()
        answer = run("sorch.py", "--mqtt", f"mqtt://127.0.0.1:{port}", "--system", "Sysop",
                     "subscribe", "--topic", "test/examples/none", "--listen")
        assert answer.returncode == 1
        assert answer.stderr == (f"error: cannot reach the MQTT broker 127.0.0.1:{port}: "
                                 "Connection refused\n")

    def test_the_consumer_and_the_provider_report_an_unreachable_service_in_one_line(self):
        port = reserved_port()
        assert_refused_connection(run("consumer.py", "--url", f"http://127.0.0.1:{port}",
                                      "--system", "C", "--service", "svc"), port)
        assert_refused_connection(run("provider.py", "--url", f"http://127.0.0.1:{port}",
                                      "--system", "P", "--service", "svc"), port)
