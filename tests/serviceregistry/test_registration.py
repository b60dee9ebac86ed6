"""Registration at start-up and revocation on SIGTERM, with the production server (gunicorn,
config.gunicorn) and a fake ServiceRegistry over real HTTP, all on loopback."""
import http.client
import signal
import socket
import time
import uuid

import pytest

from tests.concurrency import wait_until
from tests.fake_authentication import FakeAuthentication
from tests.fake_service_registry import (
    SERVICE_REGISTER,
    SERVICE_REVOKE,
    SYSTEM_REGISTER,
    SYSTEM_REVOKE,
    FakeServiceRegistry,
)
from tests.ports import reserved_port
from tests.web_server import gunicorn_process

pytestmark = pytest.mark.django_db(transaction=True)

NAME = "SimpleStoreServiceOrchestration"
DEFINITIONS = ["generalManagement", "serviceOrchestrationPushManagement",
               "serviceOrchestrationSimpleStoreManagement", "serviceOrchestrationLockManagement",
               "serviceOrchestrationHistoryManagement",
               "serviceOrchestrationServiceInstanceManagement", "serviceOrchestration"]
REGISTRATION = 9  # revoke, register the system, seven services
QUICK_RETRIES = {"SERVICE_REGISTRY_RETRY_MIN_SECONDS": "0.2",
                 "SERVICE_REGISTRY_RETRY_MAX_SECONDS": "0.5"}


@pytest.fixture
def registry():
    fake = FakeServiceRegistry()
    yield fake
    fake.stop()


@pytest.fixture
def log_path(tmp_path):
    return tmp_path / "gunicorn.log"


def stop(process, port: int, timeout: float = 20) -> float:
    """SIGTERM to the master once its worker serves (a worker still booting misses the
    signal and is only stopped after the graceful timeout); how long it took to exit."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", "/serviceorchestration/monitor/echo")
    assert connection.getresponse().status == 200
    connection.close()
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=timeout)
    return time.monotonic() - started


def wait_for_log(log_path, text: str, timeout: float = 20) -> None:
    assert wait_until(lambda: text in log_path.read_text(), timeout), \
        f"{text!r} not logged:\n{log_path.read_text()}"


class RegistrationTests:
    def test_it_registers_the_system_then_its_services(self, registry, log_path):
        with gunicorn_process({"SERVICE_REGISTRY_URL": registry.url}, log_path) as (_, port):
            calls = registry.wait_for_calls(REGISTRATION)
            wait_for_log(log_path, "Registered SimpleStoreServiceOrchestration with 7 services")
        assert [(call.method, call.path) for call in calls[:3]] == [
            ("DELETE", SYSTEM_REVOKE), ("POST", SYSTEM_REGISTER), ("POST", SERVICE_REGISTER)]
        assert calls[0].body is None
        assert calls[1].body == {"metadata": {}, "version": "5.2.0",
                                 "addresses": ["127.0.0.1"], "deviceName": None}
        services = calls[2:REGISTRATION]
        assert [call.path for call in services] == [SERVICE_REGISTER] * 7
        assert [call.body["serviceDefinitionName"] for call in services] == DEFINITIONS
        for call in services:
            properties = call.body["interfaces"][0]["properties"]
            assert properties["accessAddresses"] == ["127.0.0.1"]
            assert properties["accessPort"] == port
        assert {call.authorization for call in calls} == {f"Bearer SYSTEM//{NAME}"}

    def test_it_serves_every_operation_as_registered(self, registry, log_path):
        with gunicorn_process({"SERVICE_REGISTRY_URL": registry.url}, log_path):
            registry.wait_for_calls(REGISTRATION)
            wait_for_log(log_path, "Registered")
            # What a Java client does (audit §0.1): the first interface of the instance,
            # the operation by name, `method` sent to accessAddresses:accessPort basePath+path.
            for instance in list(registry.instances.values()):
                properties = instance["interfaces"][0]["properties"]
                for name, operation in properties["operations"].items():
                    path = properties["basePath"] + operation["path"].replace(
                        "{id}", str(uuid.uuid4()))
                    connection = http.client.HTTPConnection(properties["accessAddresses"][0],
                                                            properties["accessPort"], timeout=10)
                    connection.request(operation["method"], path, body=b"{}", headers={
                        "Authorization": "Bearer SYSTEM//Sysop",
                        "Content-Type": "application/json"})
                    try:
                        response = connection.getresponse()
                    except TimeoutError:
                        pytest.fail(f"{name} {operation} timed out:\n{log_path.read_text()}")
                    body = response.read()
                    connection.close()
                    assert response.status not in (404, 405), (name, path, body)

    def test_it_revokes_every_instance_and_the_system_on_sigterm(self, registry, log_path):
        with gunicorn_process({"SERVICE_REGISTRY_URL": registry.url}, log_path) as (process, port):
            registry.wait_for_calls(REGISTRATION)
            wait_for_log(log_path, "Registered")
            instance_ids = list(registry.instances)
            stop(process, port)
        assert process.returncode == 0
        revocations = registry.calls[REGISTRATION:]
        assert [(call.method, call.path) for call in revocations] == [
            *(("DELETE", SERVICE_REVOKE + instance_id.replace("|", "%7C"))
              for instance_id in instance_ids),
            ("DELETE", SYSTEM_REVOKE)]
        assert registry.instances == {} and registry.systems == {}
        assert "Revoked 7 services" in log_path.read_text()

    def test_it_makes_no_call_without_a_service_registry(self, registry, log_path):
        # stop() returns once the server has served, shut down and exited: start-up's
        # registration step and exit's revocation step have both run.
        with gunicorn_process({"SERVICE_REGISTRY_URL": None}, log_path) as (process, port):
            stop(process, port)
        assert registry.calls == []
        assert "ServiceRegistry" not in log_path.read_text()

    def test_it_retries_until_a_late_service_registry_comes_up(self, log_path):
        port = reserved_port()
        env = {"SERVICE_REGISTRY_URL": f"http://127.0.0.1:{port}", **QUICK_RETRIES}
        with gunicorn_process(env, log_path):
            wait_for_log(log_path, "registration failed (attempt 2)")
            assert "Connection refused" in log_path.read_text()
            late = FakeServiceRegistry(port)
            try:
                late.wait_for_calls(REGISTRATION)
                wait_for_log(log_path, "Registered")
                assert len(late.instances) == 7
            finally:
                late.stop()

    def test_it_retries_a_failing_service_registry(self, registry, log_path):
        registry.fail_with = 500
        env = {"SERVICE_REGISTRY_URL": registry.url, **QUICK_RETRIES}
        with gunicorn_process(env, log_path):
            wait_for_log(log_path, "answered HTTP 500: Broken; retrying")
            registry.fail_with = None
            wait_for_log(log_path, "Registered")
            assert len(registry.instances) == 7

    def test_it_stops_at_once_when_the_service_registry_is_gone(self, registry, log_path):
        with gunicorn_process({"SERVICE_REGISTRY_URL": registry.url}, log_path) as (process, port):
            registry.wait_for_calls(REGISTRATION)
            wait_for_log(log_path, "Registered")
            registry.stop()
            assert stop(process, port) < 5
        assert "revocation given up" in log_path.read_text()

    def test_it_stops_in_bounded_time_when_the_service_registry_hangs(self, registry, log_path):
        env = {"SERVICE_REGISTRY_URL": registry.url, "SERVICE_REGISTRY_REVOKE_SECONDS": "1"}
        with gunicorn_process(env, log_path) as (process, port):
            registry.wait_for_calls(REGISTRATION)
            wait_for_log(log_path, "Registered")
            registry.delay = 30
            assert stop(process, port) < 5
        assert "revocation" in log_path.read_text()

    def test_it_stops_while_registration_is_still_retrying(self, log_path):
        with socket.socket() as black_hole:  # accepts connections, never answers
            black_hole.bind(("127.0.0.1", 0))
            black_hole.listen(16)
            env = {"SERVICE_REGISTRY_URL": f"http://127.0.0.1:{black_hole.getsockname()[1]}",
                   "SERVICE_REGISTRY_REVOKE_SECONDS": "1", **QUICK_RETRIES}
            with gunicorn_process(env, log_path) as (process, port):
                wait_for_log(log_path, "Registering")
                assert stop(process, port) < 5


class OutsourcedIdentityTests:
    def test_it_registers_with_its_identity_token(self, log_path):
        authentication = FakeAuthentication({NAME: "secret"})

        def identify(authorization):
            token = authentication.session_token(NAME)
            return NAME if token and authorization == f"Bearer IDENTITY-TOKEN//{token}" else None

        registry = FakeServiceRegistry(identify=identify)
        env = {"SERVICE_REGISTRY_URL": registry.url, "AUTHENTICATION_POLICY": "outsourced",
               "AUTHENTICATION_SERVICE_URL": authentication.url,
               "AUTHENTICATION_PASSWORD": "secret"}
        try:
            with gunicorn_process(env, log_path) as (process, port):
                registry.wait_for_calls(REGISTRATION)
                wait_for_log(log_path, "Registered")
                authentication.close_sessions()  # our token is refused: log in again
                stop(process, port)
            token = authentication.session_token(NAME)
            assert {call.authorization for call in registry.calls} == {
                call.authorization for call in registry.calls[:REGISTRATION]} | {
                f"Bearer IDENTITY-TOKEN//{token}"}
            assert registry.instances == {} and registry.systems == {}
            assert authentication.logins == 2
        finally:
            registry.stop()
            authentication.stop()

