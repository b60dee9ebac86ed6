"""The client of the ServiceOrchestration core system (Eclipse Arrowhead 5): pull, subscribe
with a push listener over MQTT that connects and pulls again after a lost connection,
unsubscribe, the management operations of rules and service instances, token verification;
and `sorch`, its command line. Only the standard library and paho-mqtt.

    import sorch

    orchestrator = sorch.Orchestrator("http://127.0.0.1:8465", system="ExampleConsumer")
    response = orchestrator.pull(sorch.orchestration_request("exampleTemperature"))
"""
from sorch.bodies import http_instance, orchestration_request
from sorch.describe import describe_result
from sorch.errors import ClientError, ServiceError
from sorch.listener import DEFAULT_MQTT, PushListener, wait_for_pushes
from sorch.orchestrator import DEFAULT_URL, Orchestrator
from sorch.version import __version__

__all__ = ["DEFAULT_MQTT", "DEFAULT_URL", "ClientError", "Orchestrator", "PushListener",
           "ServiceError", "__version__", "describe_result", "http_instance",
           "orchestration_request", "wait_for_pushes"]
