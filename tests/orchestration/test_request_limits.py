"""Request-controlled fan-out is bounded (issue 10 item 5): an oversized list, string or JSON
value in any request body is a 400 naming the field, answered before anything is written."""
import pytest

from orchestration.models import AuthorizationToken, OrchestrationJob
from tests.helpers import SYSOP
from tests.orchestration.helpers import pull
from tests.factories import make_instances, make_rules
from tests.store.helpers import http_interface, instance_body
from tests.subscriptions.helpers import SUBSCRIBE

pytestmark = pytest.mark.django_db

TIMED = "Timed|meter|1.0.0"


@pytest.fixture
def token_protected():
    """A token-protected interface that declares no operations, so that it offers every
    requested one: each requested operation costs a token."""
    interface = http_interface(policy="TIME_LIMITED_TOKEN_AUTH")
    del interface["properties"]["operations"]
    make_instances(instance_body("Timed", "meter", interfaces=[interface]))
    make_rules(("CarConsumer1", TIMED, 1))


def operations(count: int) -> dict:
    return {"serviceRequirement": {"operations": [f"op-{i}" for i in range(count)]}}


class PullOperationLimitTests:
    def test_it_refuses_thousands_of_operations_before_issuing_any_token(self, api,
                                                                         token_protected):
        tokens, jobs = AuthorizationToken.objects.count(), OrchestrationJob.objects.count()
        response = pull(api, operations(5000))
        assert response.status_code == 400, response.content[:200]
        body = response.json()
        assert body["exceptionType"] == "INVALID_PARAMETER"
        assert body["errorMessage"].startswith("serviceRequirement.operations: ")
        assert AuthorizationToken.objects.count() == tokens
        assert OrchestrationJob.objects.count() == jobs

    def test_it_issues_tokens_for_operations_up_to_the_limit(self, api, token_protected,
                                                             settings):
        response = pull(api, operations(settings.MAX_PULL_OPERATIONS))
        assert response.status_code == 200, response.content[:200]
        [result] = response.json()["results"]
        issued = result["authorizationTokens"]["TIME_LIMITED_TOKEN_AUTH"]
        assert len(issued) == settings.MAX_PULL_OPERATIONS


# --- every bounded field: one past the limit is a 400 naming it, at the limit is accepted ---

LIMITS = {"MAX_LIST_LENGTH": 4, "MAX_STRING_LENGTH": 40, "MAX_JSON_DEPTH": 3,
          "MAX_BULK_SIZE": 5, "MAX_PULL_OPERATIONS": 2}
RULES = "/serviceorchestration/orchestration/mgmt/simple-store"
INSTANCES = "/serviceorchestration/orchestration/mgmt/service-instances"
EXISTING = "Existing|meter|1.0.0"


@pytest.fixture
def small_limits(settings):
    for name, value in LIMITS.items():
        setattr(settings, name, value)
    make_instances(instance_body("Existing", "meter"))


def nested(depth: int) -> dict:
    """An object whose containers nest `depth` levels deep."""
    value: dict = {}
    for level in range(depth - 1):
        value = {f"k{level}": value}
    return value


def requirement(service: dict) -> dict:
    return {"serviceRequirement": service}


def notify_http(**extra) -> dict:
    return {"protocol": "HTTP", "properties": {"address": "127.0.0.1", "port": 8080,
                                               "method": "POST", "path": "/n", **extra}}


def subscription(notify=None, **service) -> dict:
    return {"orchestrationRequest": requirement(service), "notifyInterface": notify or notify_http()}


def interfaces(n: int) -> list[dict]:
    variants = [("generic_http", "http"), ("generic_https", "https"), ("generic_http", "http"),
                ("generic_https", "https"), ("generic_http", "http")]
    return [http_interface(templateName=template, protocol=protocol,
                           policy=["NONE", "CERT_AUTH", "TIME_LIMITED_TOKEN_AUTH",
                                   "USAGE_LIMITED_TOKEN_AUTH", "NONE"][i])
            for i, (template, protocol) in enumerate(variants[:n])]


def with_addresses(n: int) -> dict:
    interface = http_interface()
    interface["properties"] = {"accessAddresses": [f"127.0.0.{i + 1}" for i in range(n)],
                               "accessPort": 8080, "basePath": "/t"}
    return interface


def create(**fields) -> dict:
    return {"instances": [instance_body("Limited", "meter", **fields)]}


def update(**fields) -> dict:
    return {"instances": [{"instanceId": EXISTING, "interfaces": [http_interface()], **fields}]}


def uuids(n: int) -> str:
    import uuid
    return "&".join(f"uuids={uuid.uuid4()}" for _ in range(n))


# (id, method, path, body or query builder of size n, limit setting, field named in the 400)
CASES = [
    ("pull operations", "post", "/serviceorchestration/orchestration/pull",
     lambda n: requirement({"operations": [f"op-{i}" for i in range(n)]}),
     "MAX_PULL_OPERATIONS", "serviceRequirement.operations"),
    ("pull versions", "post", "/serviceorchestration/orchestration/pull",
     lambda n: requirement({"versions": [f"1.0.{i}" for i in range(n)]}),
     "MAX_LIST_LENGTH", "serviceRequirement.versions"),
    ("pull preferred providers", "post", "/serviceorchestration/orchestration/pull",
     lambda n: requirement({"preferredProviders": [f"P{i}" for i in range(n)]}),
     "MAX_LIST_LENGTH", "serviceRequirement.preferredProviders"),
    ("pull template names", "post", "/serviceorchestration/orchestration/pull",
     lambda n: requirement({"interfaceTemplateNames": [f"t_{i}" for i in range(n)]}),
     "MAX_LIST_LENGTH", "serviceRequirement.interfaceTemplateNames"),
    ("pull address types", "post", "/serviceorchestration/orchestration/pull",
     lambda n: requirement({"interfaceAddressTypes": ["IPV4"] * n}),
     "MAX_LIST_LENGTH", "serviceRequirement.interfaceAddressTypes"),
    ("pull security policies", "post", "/serviceorchestration/orchestration/pull",
     lambda n: requirement({"securityPolicies": ["NONE"] * n}),
     "MAX_LIST_LENGTH", "serviceRequirement.securityPolicies"),
    ("pull metadata requirements", "post", "/serviceorchestration/orchestration/pull",
     lambda n: requirement({"metadataRequirements": [{"unit": i} for i in range(n)]}),
     "MAX_LIST_LENGTH", "serviceRequirement.metadataRequirements"),
    ("pull conditions of all requirements", "post", "/serviceorchestration/orchestration/pull",
     lambda n: requirement({"metadataRequirements": [{"a": 1, "b": 2}, {f"c{i}": i for i in
                                                                       range(n - 2)}]}),
     "MAX_LIST_LENGTH", "serviceRequirement.metadataRequirements"),
    ("pull requirement depth", "post", "/serviceorchestration/orchestration/pull",
     lambda n: requirement({"interfacePropertyRequirements": [nested(n)]}),
     "MAX_JSON_DEPTH", "serviceRequirement.interfacePropertyRequirements[0]"),
    ("pull requirement string", "post", "/serviceorchestration/orchestration/pull",
     lambda n: requirement({"metadataRequirements": [{"unit": "c" * n}]}),
     "MAX_STRING_LENGTH", "serviceRequirement.metadataRequirements[0]"),
    ("pull service definition", "post", "/serviceorchestration/orchestration/pull",
     lambda n: requirement({"serviceDefinition": "m" * n}),
     "MAX_STRING_LENGTH", "serviceRequirement.serviceDefinition"),
    ("pull flags", "post", "/serviceorchestration/orchestration/pull",
     lambda n: {"orchestrationFlags": dict.fromkeys(
         ["MATCHMAKING", "ALLOW_TRANSLATION", "ALLOW_INTERCLOUD", "ONLY_EXCLUSIVE",
          "ONLY_PREFERRED"][:n], False)},
     "MAX_LIST_LENGTH", "orchestrationFlags"),
    ("subscribe notify properties", "post", SUBSCRIBE,
     lambda n: subscription(notify_http(**{f"x{i}": "y" for i in range(n - 4)})),
     "MAX_LIST_LENGTH", "notifyInterface.properties"),
    ("subscribe topic", "post", SUBSCRIBE,
     lambda n: subscription({"protocol": "MQTT", "properties": {"topic": "t" * n}}),
     "MAX_STRING_LENGTH", "notifyInterface.properties.topic"),
    ("subscribe versions", "post", SUBSCRIBE,
     lambda n: subscription(versions=[f"1.{i}" for i in range(n)]),
     "MAX_LIST_LENGTH", "orchestrationRequest.serviceRequirement.versions"),
    ("rule query ids", "post", f"{RULES}/query",
     lambda n: {"ids": [f"00000000-0000-0000-0000-00000000000{i}" for i in range(n)]},
     "MAX_BULK_SIZE", "ids"),
    ("rule query consumers", "post", f"{RULES}/query",
     lambda n: {"consumerNames": [f"C{i}" for i in range(n)]}, "MAX_LIST_LENGTH", "consumerNames"),
    ("rule query sort field", "post", f"{RULES}/query",
     lambda n: {"pagination": {"page": 0, "size": 1, "sortField": "priority" + " " * (n - 8)}},
     "MAX_STRING_LENGTH", "pagination"),
    ("rule create consumer", "post", f"{RULES}/create",
     lambda n: {"entries": [{"consumer": "C" + "c" * (n - 1), "serviceInstanceId": EXISTING,
                             "priority": 1}]},
     "MAX_STRING_LENGTH", "entries[0].consumer"),
    ("rule remove uuids", "delete", f"{RULES}/remove", uuids, "MAX_BULK_SIZE", "uuids"),
    ("instance create interfaces", "post", f"{INSTANCES}/create",
     lambda n: create(interfaces=interfaces(n)), "MAX_LIST_LENGTH", "instances[0].interfaces"),
    ("instance create addresses", "post", f"{INSTANCES}/create",
     lambda n: create(interfaces=[with_addresses(n)]), "MAX_LIST_LENGTH",
     "instances[0].interfaces[0].properties"),
    ("instance create metadata list", "post", f"{INSTANCES}/create",
     lambda n: create(metadata={"units": [f"u{i}" for i in range(n)]}), "MAX_LIST_LENGTH",
     "instances[0].metadata"),
    ("instance create metadata depth", "post", f"{INSTANCES}/create",
     lambda n: create(metadata=nested(n)), "MAX_JSON_DEPTH", "instances[0].metadata"),
    ("instance create metadata key", "post", f"{INSTANCES}/create",
     lambda n: create(metadata={"k" * n: 1}), "MAX_STRING_LENGTH", "instances[0].metadata"),
    ("instance create system name", "post", f"{INSTANCES}/create",
     lambda n: create(systemName="L" + "l" * (n - 1)), "MAX_STRING_LENGTH",
     "instances[0].systemName"),
    ("instance update metadata", "put", f"{INSTANCES}/update",
     lambda n: update(metadata={f"k{i}": i for i in range(n)}), "MAX_LIST_LENGTH",
     "instances[0].metadata"),
    ("instance query ids", "post", f"{INSTANCES}/query",
     lambda n: {"instanceIds": [f"P{i}|meter|1.0.0" for i in range(n)]}, "MAX_BULK_SIZE",
     "instanceIds"),
    ("instance query providers", "post", f"{INSTANCES}/query",
     lambda n: {"providerNames": [f"P{i}" for i in range(n)]}, "MAX_LIST_LENGTH", "providerNames"),
    ("instance query requirements", "post", f"{INSTANCES}/query",
     lambda n: {"metadataRequirementsList": [{"unit": "celsius"}] * n}, "MAX_LIST_LENGTH",
     "metadataRequirementsList"),
    ("instance remove ids", "delete", f"{INSTANCES}/remove",
     lambda n: "&".join(f"ids=P{i}|meter|1.0.0" for i in range(n)), "MAX_BULK_SIZE", "ids"),
]


def send(api, method: str, path: str, payload):
    if method == "delete":
        return api.delete(f"{path}?{payload}", **SYSOP)
    return getattr(api, method)(path, payload, format="json", **SYSOP)


def written() -> dict[str, int]:
    from notifications.models import NotificationDelivery
    from store.models import Rule, ServiceInstance, ServiceInterface
    from subscriptions.models import Subscription
    models = (Rule, ServiceInstance, ServiceInterface, Subscription, NotificationDelivery,
              AuthorizationToken, OrchestrationJob)
    return {model.__name__: model.objects.count() for model in models}


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
class FieldLimitTests:
    def test_it_refuses_one_past_the_limit_naming_the_field(self, api, small_limits, case):
        _, method, path, build, setting, field = case
        before = written()
        response = send(api, method, path, build(LIMITS[setting] + 1))
        assert response.status_code == 400, response.content
        body = response.json()
        assert body["exceptionType"] == "INVALID_PARAMETER"
        assert body["errorMessage"].startswith(f"{field}: "), body["errorMessage"]
        assert written() == before

    def test_it_accepts_the_limit(self, api, small_limits, case):
        _, method, path, build, setting, _ = case
        response = send(api, method, path, build(LIMITS[setting]))
        assert response.status_code < 300, response.content


class PriorityMapLimitTests:
    def test_it_refuses_more_rules_than_a_bulk(self, api, small_limits):
        import uuid
        before = written()
        body = {str(uuid.uuid4()): 1 for _ in range(LIMITS["MAX_BULK_SIZE"] + 1)}
        response = api.put(f"{RULES}/modify-priorities", body, format="json", **SYSOP)
        assert response.status_code == 400
        assert response.json()["errorMessage"] == "Priority map has more than 5 entries"
        assert written() == before

    def test_it_modifies_a_bulk_of_rules(self, api, small_limits):
        rules = make_rules(*((f"C{i}", EXISTING, 1) for i in range(LIMITS["MAX_BULK_SIZE"])))
        body = {str(rule.id): 2 for rule in rules}
        response = api.put(f"{RULES}/modify-priorities", body, format="json", **SYSOP)
        assert response.status_code == 200, response.content


class DeepNestingTests:
    def test_it_refuses_deep_nesting_without_exhausting_the_stack(self, api):
        value: list = []
        for _ in range(500):  # deeper than the limit, well within what the JSON parser takes
            value = [value]
        response = api.post(f"{INSTANCES}/create", create(metadata={"deep": value}),
                            format="json", **SYSOP)
        assert response.status_code == 400
        assert response.json()["errorMessage"].startswith("instances[0].metadata: Ensure lists "
                                                          "and objects are nested at most 10")


class HugeNumberTests:
    def test_it_refuses_a_latency_of_thousands_of_digits(self, api, settings):
        settings.MAX_STRING_LENGTH, settings.QOS_ENABLED = 100_000, True
        response = pull(api, {"qosRequirements": {"maxLatencyMs": "1" * 5000}})
        assert response.status_code == 400
        assert response.json()["errorMessage"] == ("Invalid QoS requirement: maxLatencyMs should "
                                                   "be a positive integer")
