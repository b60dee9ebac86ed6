"""Request examples of pull, history and token verification (docs/openapi.md "Examples")."""
from drf_spectacular.utils import OpenApiExample

PULL = OpenApiExample("Operation with exclusivity", request_only=True, value={
    "serviceRequirement": {"serviceDefinition": "temperatureInfo", "operations": ["query"],
                           "interfaceTemplateNames": ["generic_http"],
                           "securityPolicies": ["NONE", "TIME_LIMITED_TOKEN_AUTH"]},
    "orchestrationFlags": {"MATCHMAKING": True},
    "exclusivityDuration": 120,
}, description="Sent as `Sysop`, the consumer of the rule create example's rules, it answers "
   "their best provider.")
# What the Java Arrowhead client's HttpCollectorDriver sends (issue 12, audit S12).
JAVA_CLIENT = OpenApiExample("Java client (HttpCollectorDriver)", request_only=True, value={
    "serviceRequirement": {"serviceDefinition": "serviceOne",
                           "interfaceTemplateNames": ["generic_http"]},
    "orchestrationFlags": {"MATCHMAKING": True, "ALLOW_INTERCLOUD": False,
                           "ALLOW_TRANSLATION": False},
})
HISTORY_QUERY = OpenApiExample("A consumer's failed pulls, newest first", request_only=True,
                               value={"statuses": ["ERROR"], "type": "PULL",
                                      "requesterSystems": ["TemperatureConsumer"],
                                      "pagination": {"page": 0, "size": 20, "direction": "DESC",
                                                     "sortField": "createdAt"}})
TOKEN = OpenApiExample("A token", value="Gx3kq9Ww1pR7yNcT5vLz0bA2",
                       description="Paste a token from a pull result; one this provider was "
                       "not issued answers `{\"verified\": false}`.")
# Lock management: a lock on an instance nobody else holds (pull's example reserves another).
_LOCKED = "TemperatureProvider|temperatureInfo|2.0.0"
LOCK_CREATE = OpenApiExample("Keep an instance for the operator", request_only=True, value={
    "locks": [{"serviceInstanceId": _LOCKED, "owner": "Sysop",
               "expiresAt": "2099-01-01T00:00:00Z"}]},
    description="Until then the instance is offered to no other consumer.")
LOCK_QUERY = OpenApiExample("The operator's locks", request_only=True, value={
    "owners": ["Sysop"], "pagination": {"page": 0, "size": 10}})
LOCK_OWNER = OpenApiExample("The create example's owner", value="Sysop")
LOCK_INSTANCES = OpenApiExample("The create example's instance", value=[_LOCKED])
