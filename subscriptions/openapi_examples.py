"""Request examples of subscribe, unsubscribe and push management (docs/openapi.md
"Examples"). Notifications go to the configured MQTT broker, on this host by default
(MQTT_BROKER_URL), so executing them sends nothing elsewhere."""
from drf_spectacular.utils import OpenApiExample

_NOTIFY = {"protocol": "MQTT", "properties": {"topic": "plant/notify"}}
_REQUEST = {"serviceRequirement": {"serviceDefinition": "temperatureInfo"}}

SUBSCRIBE = OpenApiExample("Push over MQTT", request_only=True, value={
    "orchestrationRequest": _REQUEST, "notifyInterface": _NOTIFY, "duration": 3600},
    description="Answers the subscription's id (201; 200 when the same subscription exists).")
PUSH_SUBSCRIBE = OpenApiExample("On behalf of a consumer", request_only=True, value={
    "subscriptions": [{"targetSystemName": "TemperatureConsumer",
                       "orchestrationRequest": _REQUEST, "notifyInterface": _NOTIFY,
                       "duration": 3600}]})
TRIGGER = OpenApiExample("Every subscription of a consumer", request_only=True,
                         value={"targetSystems": ["TemperatureConsumer"]})
QUERY = OpenApiExample("A consumer's subscriptions, oldest first", request_only=True,
                       value={"targetSystems": ["TemperatureConsumer"],
                              "pagination": {"page": 0, "size": 10, "direction": "ASC",
                                             "sortField": "createdAt"}})
# Stands for the id a subscribe answered, known only then; the test puts it in its place.
SUBSCRIPTION_ID = "3f2c8a1e-7b4d-4c2a-9e5f-6a7b8c9d0e1f"
SUBSCRIPTION = OpenApiExample(
    "A subscription", value=SUBSCRIPTION_ID,
    description="Replace it with the id subscribe answered; an unknown id changes nothing.")
SUBSCRIPTIONS = OpenApiExample(
    "Subscriptions", value=[SUBSCRIPTION_ID],
    description="Replace it with ids push subscribe answered; unknown ids are ignored.")
