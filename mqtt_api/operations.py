"""The operations the MQTT interface serves (issue 16), as the reference subscribes them:
`<MQTT_API_BASE_TOPIC><service base><operation>`, each answered by the HTTP operation it
mirrors. The payload becomes the request body, a path segment (a subscription id) or
repeated query parameters (lists of ids or keys), as the reference's MQTT handlers read it.
"""
from dataclasses import dataclass

from api.operations import published_services

BODY, PATH, QUERY = "body", "path", "query"


@dataclass(frozen=True)
class Operation:
    method: str
    path: str                      # the HTTP path, under /serviceorchestration/
    payload: str = BODY            # how the payload reaches the HTTP operation
    query_name: str = ""           # for QUERY: the parameter each element becomes
    params: tuple[str, ...] = ()   # request params passed on as query parameters


# Relative topic (after MQTT_API_BASE_TOPIC) → operation.
OPERATIONS: dict[str, Operation] = {
    "orchestration/pull": Operation("POST", "orchestration/pull"),
    "orchestration/subscribe": Operation("POST", "orchestration/subscribe",
                                         params=("trigger",)),
    "orchestration/unsubscribe": Operation("DELETE", "orchestration/unsubscribe/", PATH),
    "orchestration/management/store/query": Operation(
        "POST", "orchestration/mgmt/simple-store/query"),
    "orchestration/management/store/create": Operation(
        "POST", "orchestration/mgmt/simple-store/create"),
    "orchestration/management/store/modify-priorities": Operation(
        "PUT", "orchestration/mgmt/simple-store/modify-priorities"),
    "orchestration/management/store/remove": Operation(
        "DELETE", "orchestration/mgmt/simple-store/remove", QUERY, "uuids"),
    "orchestration/management/flexible-store/query": Operation(
        "POST", "orchestration/mgmt/flexible-store/query"),
    "orchestration/management/flexible-store/create": Operation(
        "POST", "orchestration/mgmt/flexible-store/create"),
    "orchestration/management/flexible-store/remove": Operation(
        "DELETE", "orchestration/mgmt/flexible-store/remove", QUERY, "ids"),
    "orchestration/management/push/subscribe": Operation(
        "POST", "orchestration/mgmt/push/subscribe"),
    "orchestration/management/push/trigger": Operation(
        "POST", "orchestration/mgmt/push/trigger"),
    "orchestration/management/push/unsubscribe": Operation(
        "DELETE", "orchestration/mgmt/push/unsubscribe", QUERY, "ids"),
    "orchestration/management/push/query": Operation(
        "POST", "orchestration/mgmt/push/query"),
    "orchestration/management/history/query": Operation(
        "POST", "orchestration/mgmt/history/query"),
    "general/management/get-log": Operation("POST", "general/mgmt/logs"),
    "general/management/get-config": Operation("GET", "general/mgmt/get-config", QUERY,
                                               "keys"),
}


def served_topics() -> list[str]:
    """The topics of the operations the orchestration strategy in force publishes
    (`<service's mqtt_base><operation>`, api/operations.py): under the flexible store the
    flexible store's management, not the simple store's."""
    published = {service.mqtt_base + name for service in published_services()
                 if service.mqtt_base for name in service.operations}
    return [topic for topic in OPERATIONS if topic in published]
