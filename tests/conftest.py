import ipaddress
import os
import socket
from collections.abc import Iterator

import pytest

pytest.register_assert_rewrite("tests.helpers", "tests.store.helpers")

from django.conf import settings as django_settings  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402

from api.requests_in_progress import request_ended  # noqa: E402
from config.celery import app as celery_app  # noqa: E402
from notifications import address_policy  # noqa: E402
from notifications.inprocess import in_process_connections_close  # noqa: E402
from orchestration.history.job_writer import job_writer_flush  # noqa: E402
from clients import exchange, peers  # noqa: E402
from orchestration.snapshot.state import snapshot_stop  # noqa: E402
from serviceregistry import discovery, instances  # noqa: E402
from tests import services  # noqa: E402
from tests.endpoints import HttpSink, MqttReceiver  # noqa: E402
from tests.client_package.built import client_package  # noqa: E402,F401  (fixture)
from tests.fake_service_registry import FakeServiceRegistry  # noqa: E402
from tests.flush_retry import flush_retried_on_deadlock  # noqa: E402,F401  (fixture)
from tests.pull_sources import pull_source  # noqa: E402,F401  (fixture)
from tests.worker import celery_worker, deliveries_settle  # noqa: E402,F401  (fixture)

# Every endpoint the tests notify listens on loopback (tests/endpoints.py), which the service
# refuses by default (notifications/address_policy.py): allowed here, for this process and for
# every worker and server it starts (they inherit its environment).
LOOPBACK_NETWORKS = "127.0.0.0/8,::1/128"
os.environ["NOTIFY_HTTP_ALLOWED_NETWORKS"] = LOOPBACK_NETWORKS
django_settings.NOTIFY_HTTP_ALLOWED_NETWORKS = tuple(
    ipaddress.ip_network(network) for network in LOOPBACK_NETWORKS.split(","))


@pytest.fixture(autouse=True)
def resolver(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """What host names resolve to in this process (no test depends on DNS): `localhost` to
    loopback, the names a test adds to the returned dict to their addresses; IP addresses, in
    any form the system reads, to themselves; other names to nothing (socket.gaierror)."""
    names = {"localhost": ["127.0.0.1", "::1"]}

    def resolve_host(host: str) -> list[str]:
        if host in names:
            return list(names[host])
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM,
                                   flags=socket.AI_NUMERICHOST)
        return list(dict.fromkeys(str(info[4][0]) for info in infos))

    monkeypatch.setattr(address_policy, "resolve_host", resolve_host)
    return names


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix: None) -> None:
    """Runs before the test database is created: fail clearly when PostgreSQL is not there."""
    services.require_postgres()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """Pull jobs are written behind the answer by a thread (orchestration.history.job_writer): a test's
    are written before its fixtures (the database first) are torn down, so that no insert runs
    into the flush of a transactional test's tables; and the session's workers are left with
    nothing to send (`deliveries_settle`). After the last test the pull snapshot's thread
    ends, and the MQTT pool's threads close their connections, before the test database
    goes (config/processes.py)."""
    job_writer_flush()
    if "celery_worker" in item.fixturenames:
        deliveries_settle()
    if nextitem is None:
        snapshot_stop()
        in_process_connections_close()
    return (yield)


@pytest.fixture(autouse=True)
def celery_mode(request) -> Iterator[None]:
    """Tasks run in the test's thread, as without a broker (nothing is left in the shared
    Redis), unless the test uses the real worker (`celery_worker`)."""
    eager = "celery_worker" not in request.fixturenames
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = eager
    yield
    celery_app.conf.task_always_eager = previous


@pytest.fixture(autouse=True)
def request_counted_ends() -> Iterator[None]:
    """A server closes every response it wrote; the test client leaves a streaming response
    open until it is read, and its request counted (api/requests_in_progress.py), which
    would hold back the snapshot's background work in the tests that follow."""
    yield
    request_ended()


@pytest.fixture
def api() -> APIClient:
    return APIClient()


@pytest.fixture
def mqtt_broker() -> tuple[str, int]:
    return services.require_mqtt()


@pytest.fixture
def mqtt_receiver(mqtt_broker: tuple[str, int]) -> Iterator[MqttReceiver]:
    receiver = MqttReceiver(*mqtt_broker)
    yield receiver
    receiver.close()


@pytest.fixture
def http_sink() -> Iterator[HttpSink]:
    sink = HttpSink()
    yield sink
    sink.close()


@pytest.fixture
def registry(settings):
    """A fake ServiceRegistry configured as ours, with the client's opener, the instance cache
    and the peers' locations cleared around the test (tests/clients/test_serviceregistry_client.py has
    its own, simpler one)."""
    fake = FakeServiceRegistry()
    settings.SERVICE_REGISTRY_URL = fake.url
    settings.SERVICE_REGISTRY_CACHE_SECONDS = 10
    exchange.opener.cache_clear()
    instances.cache_clear()
    discovery.cache_clear()
    peers.forget_locations()
    yield fake
    fake.stop()
    instances.cache_clear()
    discovery.cache_clear()
    peers.forget_locations()
