"""Seed the throw-away database of `make screenshots` (run with the project's Python, by
take.py): a superuser, a small catalog, rules (one for an instance not in the catalog),
history jobs and notification deliveries. Writes go through the services where there are
some, as the API's do."""
import datetime as dt
import os
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.utils import timezone  # noqa: E402

from identity.models import User  # noqa: E402
from notifications.models import NotificationDelivery  # noqa: E402
from orchestration.models import OrchestrationJob  # noqa: E402
from store.serializers.instances import InstanceCreateSerializer, instance_drafts_from  # noqa: E402
from store.services.instances import instance_create_many  # noqa: E402
from store.services.rules import RuleDraft, rule_create_many  # noqa: E402

USERNAME, PASSWORD = sys.argv[1], sys.argv[2]


def interface(port: int, path: str) -> dict:
    return {"templateName": "generic_http", "protocol": "http", "policy": "NONE",
            "properties": {"accessAddresses": ["10.0.4.21"], "accessPort": port,
                           "basePath": path,
                           "operations": {"query": {"path": "/query", "method": "GET"}}}}


def instance(provider: str, definition: str, version: str = "1.0.0") -> dict:
    return {"systemName": provider, "serviceDefinitionName": definition, "version": version,
            "expiresAt": None, "metadata": {"unit": "celsius"},
            "interfaces": [interface(8080, f"/{definition}")]}


User.objects.create_superuser(USERNAME, password=PASSWORD)
serializer = InstanceCreateSerializer(data={"instances": [
    instance("TemperatureProvider", "temperatureInfo"),
    instance("TemperatureProvider", "temperatureInfo", "2.0.0"),
    instance("BackupTemperatureProvider", "temperatureInfo"),
    instance("HumidityProvider", "humidityInfo"),
    instance("PressureSensorHallB", "pressureInfo"),
]})
serializer.is_valid(raise_exception=True)
instance_create_many(drafts=instance_drafts_from(serializer.validated_data), limit=None)

rule_create_many(requester="Sysop", limit=None, drafts=[RuleDraft(*spec) for spec in (
    ("TemperatureConsumer", "TemperatureProvider|temperatureInfo|2.0.0", 1),
    ("TemperatureConsumer", "BackupTemperatureProvider|temperatureInfo|1.0.0", 2),
    ("TemperatureConsumer", "HumidityProvider|humidityInfo|1.0.0", 1),
    # Not registered yet: the list marks it.
    ("TemperatureConsumer", "ColdStandbyTemperatureProviderInTheNorthWingOfHallB|"
                            "temperatureInfo|1.0.0", 3),
    ("PackagingLineController", "PressureSensorHallB|pressureInfo|1.0.0", 1),
    ("PackagingLineController", "TemperatureProvider|temperatureInfo|1.0.0", 1),
    ("AirConditioningControllerOfTheEastWingStorageHall", "HumidityProvider|humidityInfo|1.0.0",
     1),
)])

now = timezone.now().replace(microsecond=0)
for minutes, (kind, status, requester, target, definition, count, message) in enumerate((
        ("PULL", "DONE", "TemperatureConsumer", "TemperatureConsumer", "temperatureInfo", 2,
         "2 local result(s)"),
        ("PUSH", "DONE", "Sysop", "PackagingLineController", "pressureInfo", 1,
         "1 local result(s)"),
        ("PULL", "ERROR", "PackagingLineController", "PackagingLineController", "flowInfo", 0,
         "No matching rule"),
        ("PULL", "DONE", "AirConditioningControllerOfTheEastWingStorageHall",
         "AirConditioningControllerOfTheEastWingStorageHall", "humidityInfo", 1,
         "1 local result(s)"),
)):
    created = now - dt.timedelta(minutes=10 * minutes)
    OrchestrationJob.objects.create(
        type=kind, status=status, requester=requester, target=target,
        service_definition=definition, result_count=count, message=message,
        subscription_id=uuid.uuid4() if kind == "PUSH" else None, created_at=created,
        started_at=created, finished_at=created + dt.timedelta(milliseconds=40))

for minutes, (receiver, protocol, properties, destination, status, error) in enumerate((
        ("PackagingLineController", "HTTP", {"address": "10.0.7.3", "port": 8443,
                                             "method": "POST", "path": "/notify"},
         "10.0.7.3:8443", "DELIVERED", ""),
        ("TemperatureConsumer", "MQTT", {"topic": "plant/hall-b/temperature-consumer"}, "",
         "DELIVERED", ""),
        ("AirConditioningControllerOfTheEastWingStorageHall", "HTTP",
         {"address": "10.0.9.44", "port": 8080, "method": "POST", "path": "/orchestration"},
         "10.0.9.44:8080", "PENDING", "Connection refused"),
)):
    created = now - dt.timedelta(minutes=3 * minutes)
    NotificationDelivery.objects.create(
        subscription_id=uuid.uuid4(), receiver=receiver, protocol=protocol,
        properties=properties, destination=destination, payload={"results": []},
        status=status, attempts=1 if status == "DELIVERED" else 2, last_error=error,
        created_at=created, updated_at=created, next_attempt_at=created,
        delivered_at=created if status == "DELIVERED" else None)
