"""Quality of service: measuring and reading interface latency (SPEC §5 item 6).

A periodic worker task (`interfaces_measure`) times a TCP connect to every address of every
live interface and stores the result on the interface; pull (`instance_latencies`) only reads
what is stored, so an orchestration never waits on the network.

The probe opens connections to provider addresses, so it does nothing unless QOS_ENABLED.
"""
import datetime as dt
import socket
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.db.models import Min, Q
from django.utils import timezone

from store.models import ServiceInterface

# Interfaces read, probed and written per round: bounds memory and the size of one UPDATE.
BATCH_SIZE = 500
# Connects run in threads: a sequential probe of many unreachable providers would spend
# QOS_PROBE_TIMEOUT_SECONDS on each one.
MAX_WORKERS = 16

# One interface to measure: its primary key, the addresses it gives and its port.
Probe = tuple[int, tuple[str, ...], int]


def measure_connect_ms(address: str, port: int, *, timeout: float) -> float | None:
    """TCP connect time to `address`:`port` in milliseconds; None when it fails or times out.

    Name resolution is part of the measured time: a consumer reaching the provider by that
    name pays for it too. IPv6 addresses in the catalog's full 8-group form resolve as they are.
    """
    started = time.perf_counter()
    try:
        connection = socket.create_connection((address, port), timeout=timeout)
    except (OSError, OverflowError, ValueError):  # refused, unreachable, timeout, bad port
        return None
    elapsed = time.perf_counter() - started
    connection.close()
    return elapsed * 1000.0


def _probe_of(interface_id: int, properties: object) -> Probe | None:
    """None when the properties name no address and port (custom templates carry free-form
    properties)."""
    if not isinstance(properties, dict):
        return None
    addresses = properties.get("accessAddresses")
    port = properties.get("accessPort")
    if not isinstance(addresses, list) or isinstance(port, bool) or not isinstance(port, int):
        return None
    usable = tuple(dict.fromkeys(a for a in addresses if isinstance(a, str) and a))
    return (interface_id, usable, port) if usable else None


def _probe_batches(now: dt.datetime) -> Iterator[list[Probe]]:
    """Probes of live interfaces, a batch at a time, paged by primary key so no database
    cursor stays open while the network is being waited on."""
    alive = Q(instance__expires_at__isnull=True) | Q(instance__expires_at__gt=now)
    last_id = 0
    while True:
        rows = list(ServiceInterface.objects.filter(alive, pk__gt=last_id)
                    .order_by("pk").values_list("pk", "properties")[:BATCH_SIZE])
        if not rows:
            return
        last_id = rows[-1][0]
        probes = [probe for pk, properties in rows if (probe := _probe_of(pk, properties))]
        if probes:
            yield probes


def _measure(probes: list[Probe], pool: ThreadPoolExecutor, timeout: float,
             now: dt.datetime) -> None:
    """Each distinct (address, port) connected to once, and the batch written in one
    statement. An unreachable interface gets None with a fresh timestamp, so it is dropped by
    QoS instead of being offered on an older value."""
    targets = list(dict.fromkeys((address, port) for _, addresses, port in probes
                                 for address in addresses))
    times = dict(zip(targets, pool.map(
        lambda target: measure_connect_ms(*target, timeout=timeout), targets), strict=True))
    rows = [ServiceInterface(pk=pk, latency_measured_at=now, latency_ms=min(
        (ms for address in addresses if (ms := times[(address, port)]) is not None),
        default=None)) for pk, addresses, port in probes]
    ServiceInterface.objects.bulk_update(rows, ["latency_ms", "latency_measured_at"])


def interfaces_measure(*, now: dt.datetime | None = None) -> int:
    """Measure every live interface that has `accessAddresses` and an `accessPort`, storing
    the smallest connect time over its addresses. Returns how many interfaces were probed;
    0 without touching the network when QOS_ENABLED is false."""
    if not settings.QOS_ENABLED:
        return 0
    now = now or timezone.now()
    timeout = float(settings.QOS_PROBE_TIMEOUT_SECONDS)
    probed = 0
    with ThreadPoolExecutor(max_workers=MAX_WORKERS,
                            thread_name_prefix="latency-probe") as pool:
        for probes in _probe_batches(now):
            _measure(probes, pool, timeout, now)
            probed += len(probes)
    return probed


def instance_latencies(instance_ids: Iterable[int], *,
                       now: dt.datetime | None = None) -> dict[int, float]:
    """Best fresh latency per ServiceInstance primary key, in one query. A measurement counts
    when it succeeded and is at most QOS_MEASUREMENT_MAX_AGE_SECONDS old; instances without
    one are absent, which is how QoS drops them."""
    ids = list(instance_ids)
    if not ids:
        return {}
    now = now or timezone.now()
    fresh_since = now - dt.timedelta(seconds=settings.QOS_MEASUREMENT_MAX_AGE_SECONDS)
    rows = (ServiceInterface.objects
            .filter(instance_id__in=ids, latency_ms__isnull=False,
                    latency_measured_at__gte=fresh_since)
            .order_by()
            .values("instance_id")
            .annotate(best=Min("latency_ms"))
            .values_list("instance_id", "best"))
    return dict(rows)
