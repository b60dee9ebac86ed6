"""Previews shared between the consumers of a batch (orchestration.pull.services
`PreviewSharing`, which a change's evaluation of its subscriptions uses): a consumer gets
exactly the preview it would get alone, from the snapshot and from the database; consumers
with equal rules and no reservation share one; a reservation on one of their instances, or
the flexible store, keeps each consumer's own."""
import datetime as dt
import random

import pytest
from django.utils import timezone

from api.operations import FLEXIBLE_STORE
from orchestration.models import OrchestrationLock
from orchestration.pull.normalization import parse_orchestration_request
from orchestration.pull.services import PreviewSharing, orchestrate_preview
from orchestration.snapshot.state import pull_snapshot
from tests.factories import make_instances, make_rules
from tests.store.helpers import http_interface, instance_body, mqtt_interface

pytestmark = pytest.mark.django_db(transaction=True)

THERMO = "Thermo|temperatureInfo|1.0.0"
OTHER = "Other|temperatureInfo|1.0.0"
TEMPERATURE = parse_orchestration_request(
    {"serviceRequirement": {"serviceDefinition": "temperatureInfo"}})


@pytest.fixture(params=["snapshot", "database"])
def source(request, settings):
    """Each test on both sources: the process's snapshot (loaded after the test's data is
    written, by `ready`) and the database."""
    settings.PULL_SNAPSHOT = request.param == "snapshot"

    def ready() -> None:
        if settings.PULL_SNAPSHOT:
            pull_snapshot.load()

    return ready


def catalog() -> None:
    make_instances(instance_body("Thermo", metadata={"allowExclusivity": 60}),
                   instance_body("Other"))


def test_consumers_with_equal_rules_share_one_preview(source) -> None:
    catalog()
    make_rules(("Car", THERMO, 1), ("Car", OTHER, 2), ("Van", THERMO, 1), ("Van", OTHER, 2),
               ("Bus", OTHER, 1))
    source()
    sharing, now = PreviewSharing(), timezone.now()

    car, van, bus = (orchestrate_preview(consumer=consumer, request=TEMPERATURE, now=now,
                                         sharing=sharing) for consumer in ("Car", "Van", "Bus"))

    assert van is car and bus is not car
    assert [entry.service_instance_id for entry in car.results] == [THERMO, OTHER]
    assert [entry.service_instance_id for entry in bus.results] == [OTHER]
    # Another request, even an equal one parsed again, or another instant: not shared.
    again = parse_orchestration_request(
        {"serviceRequirement": {"serviceDefinition": "temperatureInfo"}})
    assert orchestrate_preview(consumer="Van", request=again, now=now, sharing=sharing) is not car
    later = now + dt.timedelta(seconds=1)
    assert orchestrate_preview(consumer="Van", request=TEMPERATURE, now=later,
                               sharing=sharing) is not car


def test_a_reservation_keeps_each_consumer_its_own_preview(source) -> None:
    catalog()
    make_rules(("Car", THERMO, 1), ("Car", OTHER, 2), ("Van", THERMO, 1), ("Van", OTHER, 2))
    now = timezone.now()
    OrchestrationLock.objects.create(service_instance_id=THERMO, owner="Car",
                                     expires_at=now + dt.timedelta(minutes=5), created_at=now)
    source()
    sharing = PreviewSharing()

    car, van = (orchestrate_preview(consumer=consumer, request=TEMPERATURE, now=now,
                                    sharing=sharing) for consumer in ("Car", "Van"))

    assert [entry.service_instance_id for entry in car.results] == [THERMO, OTHER]
    assert car.results[0].exclusive_until is not None  # its own reservation
    assert [entry.service_instance_id for entry in van.results] == [OTHER]  # not another's


def test_the_flexible_store_never_shares(source, settings) -> None:
    settings.ORCHESTRATION_STRATEGY = FLEXIBLE_STORE
    source()
    sharing, now = PreviewSharing(), timezone.now()
    first = orchestrate_preview(consumer="Car", request=TEMPERATURE, now=now, sharing=sharing)
    second = orchestrate_preview(consumer="Van", request=TEMPERATURE, now=now, sharing=sharing)
    assert first == second and first is not second


def test_shared_previews_are_each_consumers_own(source) -> None:
    """Random catalog, rules (consumers of a few rule sets, so that many share), reservations
    and requests: each consumer's preview through one sharing per request list is the one it
    gets alone."""
    rng = random.Random(34)
    now = timezone.now()
    bodies, ids = [], []
    for provider in (f"Provider{n}" for n in range(5)):
        for definition in ("temperatureInfo", "pressureInfo"):
            if rng.random() < 0.8:
                expires = rng.choice([None, now + dt.timedelta(minutes=30)])
                bodies.append(instance_body(
                    provider, definition, version=rng.choice(["1.0.0", "2.0.0"]),
                    expiresAt=expires and expires.isoformat().replace("+00:00", "Z"),
                    metadata={"rank": rng.randint(0, 2), "allowExclusivity": 60},
                    interfaces=rng.sample([http_interface(), mqtt_interface()],
                                          rng.randint(1, 2))))
                ids.append(f"{provider}|{definition}|{bodies[-1]['version']}")
    make_instances(*bodies)
    ids.append("Ghost|temperatureInfo|1.0.0")  # a rule to an instance the catalog lacks
    rule_sets = [[(i, rng.randint(1, 5)) for i in ids if rng.random() < 0.5] for _ in range(3)]
    consumers = [f"Consumer{n}" for n in range(12)]
    make_rules(*{(consumer, i.split("|")[1], priority): (consumer, i, priority)
                 for n, consumer in enumerate(consumers)
                 for i, priority in rule_sets[n % 3]}.values())
    for instance_id in rng.sample(ids[:-1], 2):
        OrchestrationLock.objects.create(service_instance_id=instance_id,
                                         owner=rng.choice(consumers),
                                         expires_at=now + dt.timedelta(hours=2), created_at=now)
    source()
    at = now + dt.timedelta(hours=1)  # some instances have expired by then
    requests = [parse_orchestration_request(body) for body in (
        {}, {"orchestrationFlags": {"MATCHMAKING": True}},
        {"serviceRequirement": {"serviceDefinition": "temperatureInfo"}},
        {"serviceRequirement": {"metadataRequirements": [{"rank": 1}]}},
        {"serviceRequirement": {"versions": ["2.0.0"]}},
        {"serviceRequirement": {"interfaceTemplateNames": ["generic_mqtt"]}},
        {"serviceRequirement": {"preferredProviders": ["Provider2"]},
         "orchestrationFlags": {"ONLY_PREFERRED": True}},
        {"serviceRequirement": {"serviceDefinition": "pressureInfo"},
         "exclusivityDuration": 30, "orchestrationFlags": {"MATCHMAKING": True}})]
    sharing, shared, answered = PreviewSharing(), 0, 0
    for request in requests:
        previews = set()
        for consumer in consumers:
            preview = orchestrate_preview(consumer=consumer, request=request, now=at,
                                          sharing=sharing)
            assert preview == orchestrate_preview(consumer=consumer, request=request, now=at), (
                consumer, request)
            shared += id(preview) in previews
            previews.add(id(preview))
            answered += len(preview.results)
    assert answered > 100 and shared > 20  # the data made the comparisons count
