"""The runnable client examples in docs/examples (consumer, provider) and the client package's
`sorch` command, as a user runs them after `pip install ./python-client`: the wheel built and
installed by the `client_package` fixture, against the real service (gunicorn on loopback with
the test database, no Celery broker: the web process evaluates subscriptions and sends pushes)
and the real Mosquitto. The walk-through runs after the README's quick start, as a new user
does, and leaves what the quick start made alone."""
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
from store.models import Rule
from subscriptions.models import Subscription
from tests.client_package.built import BuiltClient
from tests.client_package.service import client_service
from tests.factories import make_instances, make_rules
from tests.ports import reserved_port
from tests.store.helpers import instance_body
from tests.subscriptions.helpers import mqtt_notify, subscribe, subscription_body
from tests.worker import ROOT

pytestmark = pytest.mark.django_db(transaction=True)

EXAMPLES = ROOT / "docs" / "examples"
PATIENCE = 60


# The examples' own names (docs/examples/README.md), the defaults of consumer.py and provider.py.
CONSUMER, PROVIDER, SERVICE = "ExampleConsumer", "ExampleProvider", "exampleTemperature"
# What the README's quick start leaves behind.
QUICK_START_INSTANCE = "TemperatureProvider|temperatureInfo|1.0.0"


@pytest.fixture
def client(client_package: BuiltClient) -> BuiltClient:
    return client_package


def command(client: BuiltClient, program: str) -> list[str]:
    """`sorch` (the installed command) or an example's file."""
    if program == "sorch":
        return [str(client.script)]
    return [sys.executable, str(EXAMPLES / program)]


def run(client: BuiltClient, program: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*command(client, program), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=PATIENCE, env=client.environment())


def start(client: BuiltClient, program: str, log: Path, *args: str) -> subprocess.Popen:
    with log.open("w") as output:
        return subprocess.Popen([*command(client, program), *args], cwd=ROOT, stdout=output,
                                stderr=subprocess.STDOUT, env=client.environment())


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


@pytest.fixture
def url(tmp_path: Path, names: dict[str, str]) -> Iterator[str]:
    # The provider registers its own instance: a management operation.
    with client_service(tmp_path / "gunicorn.log",
                        managers=f"{PROVIDER},{names['provider']}") as url:
        yield url


@pytest.fixture
def token_policy_url(tmp_path: Path) -> Iterator[str]:
    with client_service(tmp_path / "gunicorn.log", policy="token") as url:
        yield url


@pytest.fixture
def quick_start(api) -> str:
    """What the README's quick start made: TemperatureProvider's instance, TemperatureConsumer's
    rule to it and subscription on plant/temperature-consumer; the subscription's id."""
    make_instances(instance_body("TemperatureProvider"))
    make_rules(("TemperatureConsumer", QUICK_START_INSTANCE, 1))
    answer = subscribe(api, subscription_body(notify=mqtt_notify("plant/temperature-consumer")))
    assert answer.status_code == 201, answer.content
    return answer.content.decode().strip()


class ClientExamplesTests:
    def test_the_walk_through_runs_after_the_quick_start_and_leaves_it_alone(
            self, client, url, quick_start, tmp_path):
        instance_id = f"{PROVIDER}|{SERVICE}|1.0.0"
        provider_port = str(reserved_port())
        provider_args = ["--url", url, "--port", provider_port]
        serving = start(client, "provider.py", tmp_path / "provider.log", *provider_args,
                        "--metadata", "building=a", "--serve")
        try:
            assert wait_for_line(serving, tmp_path / "provider.log", "registered") == (
                f"registered {instance_id}")
            wait_for_line(serving, tmp_path / "provider.log", "serving")

            operator = ["--url", url, "--system", "Sysop"]
            created = run(client, "sorch", *operator, "rules", "create", "--consumer", CONSUMER,
                          "--instance", instance_id)
            assert (created.returncode, created.stderr) == (0, "")
            assert created.stdout.endswith("1 rule(s) created\n")
            listed = run(client, "sorch", *operator, "rules", "list", "--consumer", CONSUMER)
            assert listed.returncode == 0
            assert f"{CONSUMER}  {instance_id}  priority=1" in listed.stdout
            instances = run(client, "sorch", *operator, "instances", "list", "--provider",
                            PROVIDER)
            assert instances.returncode == 0
            assert f'{instance_id}  expiresAt=None  metadata={{"building": "a"}}' in (
                instances.stdout)

            pulled = run(client, "sorch", "--url", url, "--system", CONSUMER, "--json", "pull",
                         "--service", SERVICE, "--operation", "query")
            assert pulled.returncode == 0, pulled.stderr
            [result] = json.loads(pulled.stdout)["results"]
            assert result["serviceInstanceId"] == instance_id
            token = result["authorizationTokens"]["TIME_LIMITED_TOKEN_AUTH"]["query"]["token"]

            verified = run(client, "provider.py", *provider_args, "--no-register",
                           f"--verify={token}")
            assert verified.returncode == 0, verified.stderr
            assert verified.stdout.startswith(
                f"token verified: consumer={CONSUMER} service={SERVICE} scope=query ")
            refused = run(client, "provider.py", *provider_args, "--no-register", "--verify",
                          "forged")
            assert (refused.returncode, refused.stdout) == (0, "token not verified\n")
            # tokens are URL-safe base64, so one in 64 begins with '-': the '=' form takes it
            dashed = run(client, "provider.py", *provider_args, "--no-register",
                         "--verify=-forged")
            assert (dashed.returncode, dashed.stdout) == (0, "token not verified\n")

            topic = f"test/examples/{uuid.uuid4().hex}"
            consumer_log = tmp_path / "consumer.log"
            listening = start(client, "consumer.py", consumer_log, "--url", url,
                              "--mqtt", settings.MQTT_BROKER_URL, "--topic", topic,
                              "--call", "query", "--max-pushes", "1",
                              "--timeout", str(PATIENCE))
            try:
                subscribed = wait_for_line(listening, consumer_log, "subscribed ")
                subscription_id = subscribed.split()[1]
                output = consumer_log.read_text()
                assert output.startswith("pull: 1 result(s)\n")
                assert "call query: 200 " in output and f'"consumer": "{CONSUMER}"' in output

                # The provider's instance changes: the consumer is pushed the new result.
                changed = run(client, "provider.py", *provider_args, "--metadata", "building=b")
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
        # The quick start's rule and subscription are as it left them.
        assert set(Rule.objects.values_list("consumer", "service_instance_id")) == {
            ("TemperatureConsumer", QUICK_START_INSTANCE), (CONSUMER, instance_id)}
        assert Subscription.objects.get(id=quick_start).notify_properties == {
            "topic": "plant/temperature-consumer"}

    def test_the_command_line_registers_subscribes_listens_and_cleans_up(self, client, url, names,
                                                                          tmp_path):
        consumer, service = names["consumer"], names["service"]
        instance_id = f"{names['provider']}|{service}|2.0.0"
        operator = ["--url", url, "--system", "Sysop"]
        registered = run(client, "sorch", *operator, "instances", "register", "--provider",
                         names["provider"], "--service", service, "--version", "2",
                         "--port", "8080", "--base-path", "/temperature",
                         "--operation", "query=GET:/query", "--metadata", "unit=celsius")
        assert (registered.returncode, registered.stderr) == (0, "")
        assert registered.stdout.endswith("1 instance(s) registered\n")
        created = run(client, "sorch", *operator, "--json", "rules", "create", "--consumer",
                      consumer, "--instance", instance_id)
        [rule] = json.loads(created.stdout)["entries"]

        topic = f"test/examples/{uuid.uuid4().hex}"
        log = tmp_path / "listen.log"
        listening = start(client, "sorch", log, "--url", url, "--system", consumer, "--mqtt",
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

        unsubscribed = run(client, "sorch", "--url", url, "--system", consumer, "unsubscribe",
                           subscription_id)
        assert (unsubscribed.returncode, unsubscribed.stdout) == (
            0, f"unsubscribed {subscription_id}\n")
        assert not Subscription.objects.filter(id=subscription_id).exists()
        removed = run(client, "sorch", *operator, "rules", "remove", rule["id"])
        assert (removed.returncode, removed.stdout) == (
            0, "removed 1 id(s) (unknown ids are ignored)\n")
        listed = run(client, "sorch", *operator, "rules", "list", "--consumer", consumer)
        assert listed.stdout == "0 rule(s)\n"

    def test_a_refused_request_prints_the_services_message_and_exits_1(self, client, url, names):
        answer = run(client, "sorch", "--url", url, "--system", "Sysop", "rules", "create",
                     "--consumer", names["consumer"], "--instance", "P|svc|1.0.0",
                     "--priority", "0")
        assert answer.returncode == 1
        assert answer.stdout == ""
        assert answer.stderr == ("error: 400 INVALID_PARAMETER: Priority should be positive "
                                 "(POST /serviceorchestration/orchestration/mgmt/simple-store/"
                                 "create)\n")

    def test_a_refused_identity_prints_the_services_message_and_exits_1(self, client, url, names):
        answer = run(client, "sorch", "--url", url, "--system", names["consumer"], "rules", "list")
        assert answer.returncode == 1
        assert answer.stderr == ("error: 403 FORBIDDEN: Requester has no management permission "
                                 "(POST /serviceorchestration/orchestration/mgmt/simple-store/"
                                 "query)\n")

    def test_it_identifies_with_an_identity_token(self, client, token_policy_url, names):
        raw, _ = identity_token_issue(system_name="ExampleOperator", operator=True,
                                      ttl_seconds=600)
        listed = run(client, "sorch", "--url", token_policy_url, f"--token={raw}", "rules", "list",
                     "--consumer", names["consumer"])
        assert (listed.returncode, listed.stdout) == (0, "0 rule(s)\n")
        refused = run(client, "sorch", "--url", token_policy_url, "--token", "unknown", "rules",
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
    def test_an_unreachable_service_is_one_line_and_exit_1(self, client):
        port = reserved_port()
        assert_refused_connection(run(client, "sorch", "--url", f"http://127.0.0.1:{port}",
                                      "--system", "Sysop", "rules", "list"), port)

    def test_an_unreachable_broker_is_one_line_and_exit_1(self, client):
        port = reserved_port()
        answer = run(client, "sorch", "--mqtt", f"mqtt://127.0.0.1:{port}", "--system", "Sysop",
                     "subscribe", "--topic", "test/examples/none", "--listen")
        assert answer.returncode == 1
        assert answer.stderr == (f"error: cannot reach the MQTT broker 127.0.0.1:{port}: "
                                 "Connection refused\n")

    def test_the_consumer_and_the_provider_report_an_unreachable_service_in_one_line(self, client):
        port = reserved_port()
        assert_refused_connection(run(client, "consumer.py", "--url", f"http://127.0.0.1:{port}",
                                      "--system", "C", "--service", "svc"), port)
        assert_refused_connection(run(client, "provider.py", "--url", f"http://127.0.0.1:{port}",
                                      "--system", "P", "--service", "svc"), port)
