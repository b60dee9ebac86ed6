"""Request examples of the rule store and instance catalog operations (docs/openapi.md
"Examples"). Executed in order by tests/test_openapi_examples.py as `Sysop`, the operator
Swagger UI is authorized as by default: instance create registers the provider the rules
name, pull (orchestration.openapi_examples) then finds it."""
from drf_spectacular.utils import OpenApiExample

EXAMPLE_INSTANCE_ID = "TemperatureProvider|temperatureInfo|1.0.0"
_INTERFACE = {"templateName": "generic_http", "protocol": "http", "policy": "NONE",
              "properties": {"accessAddresses": ["192.0.2.10"], "accessPort": 8080,
                             "basePath": "/temperature",
                             "operations": {"query": {"path": "/query", "method": "GET"}}}}

INSTANCE_CREATE = OpenApiExample("An HTTP service", request_only=True, value={
    "instances": [{
        "systemName": "TemperatureProvider", "serviceDefinitionName": "temperatureInfo",
        "version": "1.0", "expiresAt": None, "metadata": {"unit": "celsius"},
        "interfaces": [_INTERFACE]}]},
    description=f"Version `1.0` is stored as `1.0.0`: the instance id is `{EXAMPLE_INSTANCE_ID}`.")
INSTANCE_UPDATE = OpenApiExample("New metadata, no expiry", request_only=True, value={
    "instances": [{"instanceId": EXAMPLE_INSTANCE_ID,
                   "metadata": {"unit": "celsius", "room": "lab"}, "interfaces": [_INTERFACE]}]},
    description="Updates the instance the create example registers.")
INSTANCE_QUERY = OpenApiExample("Celsius instances of a service", request_only=True, value={
    "serviceDefinitionNames": ["temperatureInfo"], "metadataRequirementsList": [{"unit": "celsius"}],
    "pagination": {"page": 0, "size": 10}})
INSTANCE_IDS = OpenApiExample("The create example's instance", value=[EXAMPLE_INSTANCE_ID])

RULE_CREATE = OpenApiExample("Two providers for the operator", request_only=True, value={
    "entries": [
        {"consumer": "sysop", "serviceInstanceId": EXAMPLE_INSTANCE_ID, "priority": 1},
        {"consumer": "Sysop",
         "serviceInstanceId": "BackupProvider|temperatureInfo|1.0.0", "priority": 2},
    ]}, description="`sysop` is normalized to `Sysop`. The consumer is the operator so that "
    "pull's example, sent with the same identity, finds the first provider.")
RULE_QUERY = OpenApiExample("A consumer's rules, best first", request_only=True, value={
    "consumerNames": ["Sysop"], "minPriority": 1,
    "pagination": {"page": 0, "size": 10, "direction": "ASC", "sortField": "priority"}})
# Stand for the ids of the two rules the create example makes (priorities 1 and 2): a rule id
# is only known from the create answer; the test puts those ids in their place.
SWAPPED_RULES = ("0b9c4a4e-4a4e-4b9c-9c4a-4e4a4e4b9c4a", "5d1e7f3a-2c6b-4e8d-9a0f-1b2c3d4e5f60")
MODIFY_PRIORITIES = OpenApiExample(
    "Swap two priorities", request_only=True,
    value={SWAPPED_RULES[0]: 2, SWAPPED_RULES[1]: 1},
    description="Replace the two ids with those of the rules the create example answered "
    "(priorities 1 and 2); ids with no rule are a 400.")
RULE_IDS = OpenApiExample(
    "The create example's rules", value=list(SWAPPED_RULES),
    description="Replace them with the ids the create example answered; unknown ids are "
    "ignored (200).")

FLEXIBLE_CREATE = OpenApiExample("Celsius providers for the operator", request_only=True, value={
    "entries": [
        {"consumer": "Sysop", "provider": "TemperatureProvider",
         "serviceDefinition": "temperatureInfo", "interfaceTemplateName": "generic_http",
         "serviceMetadataRequirements": [{"unit": "celsius"}], "minVersion": "1.0",
         "priority": 1},
        {"consumerMetadataRequirements": [{"site": "plant1"}],
         "providerMetadataRequirements": [{"vendor": {"op": "IN", "value": ["acme", "contoso"]}}],
         "serviceDefinition": "temperatureInfo", "priority": 2},
    ]}, description="The first rule selects the instance the catalog's create example registers "
    "for the operator, so that pull's example, sent with the same identity, finds it; the "
    "second, any consumer of site `plant1` (its system metadata in the ServiceRegistry) with "
    "the providers of two vendors.")
FLEXIBLE_QUERY = OpenApiExample("The rules of one service, best first", request_only=True,
                                value={"serviceDefinitions": ["temperatureInfo"],
                                       "pagination": {"page": 0, "size": 10, "direction": "ASC",
                                                      "sortField": "priority"}})
# Stands for the id of the first rule the flexible create example makes (see SWAPPED_RULES).
FLEXIBLE_RULE = "7e57f1e8-0b1e-4c0d-9a11-5f0e0c1a2b3c"
FLEXIBLE_RULE_IDS = OpenApiExample(
    "The create example's first rule", value=[FLEXIBLE_RULE],
    description="Replace it with an id the create example answered; unknown ids are ignored "
    "(200).")
