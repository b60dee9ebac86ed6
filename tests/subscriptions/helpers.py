from tests.helpers import as_system

SUBSCRIBE = "/serviceorchestration/orchestration/subscribe"
UNSUBSCRIBE = "/serviceorchestration/orchestration/unsubscribe"

HTTP_NOTIFY = {"protocol": "HTTP", "properties": {"address": "127.0.0.1", "port": "8080",
                                                  "method": "POST", "path": "/notify"}}


def mqtt_notify(topic: str = "plant/notify") -> dict:
    return {"protocol": "MQTT", "properties": {"topic": topic}}


def subscribe(api, body, consumer: str = "TemperatureConsumer", query: str = ""):
    return api.post(f"{SUBSCRIBE}{query}", body, format="json", **as_system(consumer))


def subscription_body(service_definition: str | None = "temperatureInfo", notify=None,
                      **fields) -> dict:
    request = {"serviceRequirement": {"serviceDefinition": service_definition}}
    body = {"orchestrationRequest": request, "notifyInterface": notify or HTTP_NOTIFY}
    body.update(fields)
    return body
