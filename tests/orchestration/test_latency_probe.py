"""The QoS latency probe, its selector and its periodic task (SPEC §5 item 6).

Every connection goes to loopback listeners started here: the probe never reaches out further.
"""
import datetime as dt
import socket
from collections.abc import Iterator

import pytest
from django.conf import settings as django_settings
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from orchestration.pull import latency
from orchestration.pull.latency import (
    instance_latencies,
    interfaces_measure,
    measure_connect_ms,
)
from orchestration.tasks import measure_interface_latency_task
from store.models import ServiceInstance, ServiceInterface
from tests.factories import make_instances
from tests.ports import reserved_port
from tests.store.helpers import http_interface, instance_body, mqtt_interface

pytestmark = pytest.mark.django_db

TIMEOUT = 0.5


@pytest.fixture
def qos(settings):
    """QoS switched on with a short probe timeout, so an unanswered connect is cheap."""
    settings.QOS_ENABLED = True
    settings.QOS_PROBE_TIMEOUT_SECONDS = TIMEOUT
    return settings


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP listener on 127.0.0.1 at a port the OS chose; the kernel completes connects
    from the backlog, so nothing needs to accept them."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    yield server
    server.close()


@pytest.fixture
def port(listener: socket.socket) -> int:
    return listener.getsockname()[1]


@pytest.fixture
def closed_port() -> int:
    """A port nobody listens on (connecting is refused)."""
    return reserved_port()


def reachable_at(port: int, *addresses: str) -> dict:
    """A generic_http interface at `port` on the given addresses (default 127.0.0.1)."""
    properties = {**http_interface()["properties"],
                  "accessAddresses": list(addresses or ("127.0.0.1",)), "accessPort": port}
    return http_interface(properties=properties)


def make_instance(provider: str, *interfaces: dict) -> ServiceInstance:
    return make_instances(instance_body(provider, interfaces=list(interfaces)))[0]


def interface_of(instance: ServiceInstance, position: int = 0) -> ServiceInterface:
    return ServiceInterface.objects.get(instance=instance, position=position)


class MeasureConnectMsTests:
    def test_it_returns_the_connect_time_in_milliseconds(self, port):
        ms = measure_connect_ms("127.0.0.1", port, timeout=TIMEOUT)
        assert ms is not None and 0 < ms < TIMEOUT * 1000

    def test_it_returns_none_when_nobody_listens(self, closed_port):
        assert measure_connect_ms("127.0.0.1", closed_port, timeout=TIMEOUT) is None

    def test_it_returns_none_for_a_port_out_of_range(self):
        assert measure_connect_ms("127.0.0.1", 70000, timeout=TIMEOUT) is None


class InterfacesMeasureTests:
    def test_it_does_nothing_when_qos_is_disabled(self, settings, port, monkeypatch):
        settings.QOS_ENABLED = False
        monkeypatch.setattr(latency, "measure_connect_ms", _no_connection_expected)
        instance = make_instance("Provider", reachable_at(port))
        assert interfaces_measure() == 0
        stored = interface_of(instance)
        assert (stored.latency_ms, stored.latency_measured_at) == (None, None)

    def test_it_stores_a_small_positive_latency_for_a_listening_interface(self, qos, port):
        instance = make_instance("Provider", reachable_at(port))
        now = timezone.now()
        assert interfaces_measure(now=now) == 1
        stored = interface_of(instance)
        assert 0 < stored.latency_ms < TIMEOUT * 1000
        assert stored.latency_measured_at == now

    def test_it_stores_none_with_a_timestamp_for_an_unreachable_interface(self, qos,
                                                                          closed_port):
        instance = make_instance("Provider", reachable_at(closed_port))
        now = timezone.now()
        assert interfaces_measure(now=now) == 1
        stored = interface_of(instance)
        assert (stored.latency_ms, stored.latency_measured_at) == (None, now)

    def test_it_replaces_an_earlier_value_when_the_interface_stops_answering(self, qos,
                                                                             listener, port):
        instance = make_instance("Provider", reachable_at(port))
        interfaces_measure()
        assert interface_of(instance).latency_ms is not None
        listener.close()
        later = timezone.now() + dt.timedelta(seconds=1)
        interfaces_measure(now=later)
        stored = interface_of(instance)
        assert (stored.latency_ms, stored.latency_measured_at) == (None, later)

    def test_it_measures_every_address_of_an_interface(self, qos, port):
        instance = make_instance("Provider", reachable_at(port, "127.0.0.1", "localhost"))
        assert interfaces_measure() == 1
        assert 0 < interface_of(instance).latency_ms < TIMEOUT * 1000

    @pytest.mark.parametrize("times, best", [
        ({"127.0.0.1": 3.0, "localhost": 1.5}, 1.5),
        ({"127.0.0.1": None, "localhost": 2.0}, 2.0),
        ({"127.0.0.1": 0.7, "localhost": None}, 0.7),
    ])
    def test_it_keeps_the_smallest_successful_time_over_the_addresses(self, qos, monkeypatch,
                                                                      times, best):
        monkeypatch.setattr(latency, "measure_connect_ms",
                            lambda address, port, *, timeout: times[address])
        instance = make_instance("Provider", reachable_at(9, "127.0.0.1", "localhost"))
        interfaces_measure()
        assert interface_of(instance).latency_ms == best

    def test_it_probes_each_address_and_port_once_per_round(self, qos, monkeypatch):
        calls = []
        monkeypatch.setattr(latency, "measure_connect_ms",
                            lambda address, port, *, timeout: calls.append((address, port)) or 1.0)
        make_instance("A", reachable_at(9), reachable_at(9, "127.0.0.1", "localhost"))
        make_instance("B", reachable_at(9))
        assert interfaces_measure() == 3
        assert sorted(calls) == [("127.0.0.1", 9), ("localhost", 9)]

    def test_it_uses_the_configured_timeout(self, qos, monkeypatch):
        timeouts = []
        monkeypatch.setattr(latency, "measure_connect_ms",
                            lambda address, port, *, timeout: timeouts.append(timeout))
        make_instance("Provider", reachable_at(9))
        interfaces_measure()
        assert timeouts == [TIMEOUT]

    def test_it_does_not_probe_expired_instances(self, qos, port):
        expired = make_instance("Expired", reachable_at(port))
        expiring = make_instance("Expiring", reachable_at(port))
        now = timezone.now()
        ServiceInstance.objects.filter(pk=expired.pk).update(expires_at=now)
        ServiceInstance.objects.filter(pk=expiring.pk).update(
            expires_at=now + dt.timedelta(minutes=1))
        assert interfaces_measure(now=now) == 1
        assert interface_of(expired).latency_measured_at is None
        assert interface_of(expiring).latency_measured_at == now

    def test_it_skips_interfaces_without_access_addresses_and_port(self, qos, port):
        custom = {"templateName": "opc_ua", "protocol": "opc.tcp", "policy": "NONE",
                  "properties": {"endpoint": f"opc.tcp://127.0.0.1:{port}"}}
        text_port = {"templateName": "custom_tcp", "protocol": "tcp", "policy": "NONE",
                     "properties": {"accessAddresses": ["127.0.0.1"], "accessPort": str(port)}}
        no_address = {"templateName": "custom_tcp", "protocol": "tcp", "policy": "NONE",
                      "properties": {"accessAddresses": [], "accessPort": port}}
        instance = make_instance("Provider", custom, text_port, no_address, reachable_at(port))
        assert interfaces_measure() == 1
        measured = ServiceInterface.objects.filter(instance=instance).values_list(
            "position", "latency_measured_at")
        assert [position for position, at in measured if at is not None] == [3]

    def test_it_writes_each_batch_with_a_single_update(self, qos, monkeypatch):
        monkeypatch.setattr(latency, "measure_connect_ms",
                            lambda address, port, *, timeout: 1.0)
        monkeypatch.setattr(latency, "BATCH_SIZE", 2)
        for provider in ("A", "B", "C"):
            make_instance(provider, reachable_at(9), mqtt_interface())
        with CaptureQueriesContext(connection) as queries:
            assert interfaces_measure() == 6
        updates = [q["sql"] for q in queries if q["sql"].startswith("UPDATE")]
        assert len(updates) == 3
        assert not ServiceInterface.objects.filter(latency_ms__isnull=True).exists()


class InstanceLatenciesTests:
    def test_it_returns_the_smallest_fresh_latency_per_instance(self):
        now = timezone.now()
        a, b = two_interface_instance("A"), two_interface_instance("B")
        measured(a, 0, 8.0, now), measured(a, 1, 3.0, now)
        measured(b, 0, 5.0, now)
        assert instance_latencies([a.pk, b.pk], now=now) == {a.pk: 3.0, b.pk: 5.0}

    def test_it_ignores_stale_measurements(self):
        now = timezone.now()
        max_age = dt.timedelta(seconds=django_settings.QOS_MEASUREMENT_MAX_AGE_SECONDS)
        fresh, stale = two_interface_instance("Fresh"), two_interface_instance("Stale")
        measured(fresh, 0, 9.0, now - max_age)  # exactly at the limit still counts
        measured(fresh, 1, 1.0, now - max_age - dt.timedelta(seconds=1))
        measured(stale, 0, 1.0, now - max_age - dt.timedelta(seconds=1))
        assert instance_latencies([fresh.pk, stale.pk], now=now) == {fresh.pk: 9.0}

    def test_it_ignores_unreachable_results(self):
        now = timezone.now()
        mixed, down = two_interface_instance("Mixed"), two_interface_instance("Down")
        measured(mixed, 0, None, now), measured(mixed, 1, 4.0, now)
        measured(down, 0, None, now), measured(down, 1, None, now)
        assert instance_latencies([mixed.pk, down.pk], now=now) == {mixed.pk: 4.0}

    def test_it_leaves_out_instances_never_measured_or_not_asked_for(self):
        now = timezone.now()
        asked, never, other = (two_interface_instance(p) for p in ("Asked", "Never", "Other"))
        measured(asked, 0, 2.0, now), measured(other, 0, 1.0, now)
        assert instance_latencies([asked.pk, never.pk], now=now) == {asked.pk: 2.0}

    def test_it_runs_a_single_query(self, django_assert_num_queries):
        now = timezone.now()
        instances = [two_interface_instance(p) for p in ("A", "B", "C")]
        for index, instance in enumerate(instances):
            measured(instance, 0, float(index + 1), now)
        with django_assert_num_queries(1):
            assert len(instance_latencies((i.pk for i in instances), now=now)) == 3

    def test_it_does_not_query_for_no_instances(self, django_assert_num_queries):
        with django_assert_num_queries(0):
            assert instance_latencies([]) == {}


class MeasureInterfaceLatencyTaskTests:
    def test_it_measures_through_the_service(self, qos, port, closed_port):
        up = make_instance("Up", reachable_at(port))
        down = make_instance("Down", reachable_at(closed_port))
        assert measure_interface_latency_task.apply().get() == 2
        assert interface_of(up).latency_ms > 0
        assert interface_of(down).latency_ms is None
        assert interface_of(down).latency_measured_at is not None

    def test_it_does_nothing_when_qos_is_disabled(self, settings, port):
        settings.QOS_ENABLED = False
        instance = make_instance("Provider", reachable_at(port))
        assert measure_interface_latency_task.apply().get() == 0
        assert interface_of(instance).latency_measured_at is None

    def test_it_is_scheduled_by_beat_only_when_qos_is_enabled(self):
        # Settings as loaded at start-up: the schedule is decided there, from QOS_ENABLED.
        entry = django_settings.CELERY_BEAT_SCHEDULE.get("measure-interface-latency")
        assert (entry is not None) == django_settings.QOS_ENABLED
        if entry is not None:
            assert entry["task"] == measure_interface_latency_task.name
            assert entry["schedule"] == float(django_settings.QOS_PROBE_INTERVAL_SECONDS)

    def test_it_has_the_name_beat_schedules(self):
        assert measure_interface_latency_task.name == "orchestration.measure_interface_latency"


def two_interface_instance(provider: str) -> ServiceInstance:
    return make_instance(provider, http_interface(), mqtt_interface())


def measured(instance: ServiceInstance, position: int, ms: float | None,
             at: dt.datetime) -> None:
    ServiceInterface.objects.filter(instance=instance, position=position).update(
        latency_ms=ms, latency_measured_at=at)


def _no_connection_expected(address: str, port: int, *, timeout: float) -> float:
    raise AssertionError(f"connected to {address}:{port} while QoS is disabled")
