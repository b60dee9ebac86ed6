"""Pull and subscription evaluation with instances from the ServiceRegistry (issue 12 items 3
and 5): one lookup per pull, cached for SERVICE_REGISTRY_CACHE_SECONDS, the local catalog for
ids the SR does not know, 503 EXTERNAL_SERVER_ERROR when a needed lookup fails. The fake SR
answers over real HTTP on the loopback."""
import time

import pytest

from notifications.models import NotificationDelivery
from orchestration.history.job_writer import job_writer_flush
from orchestration.models import OrchestrationJob
from clients import exchange
from serviceregistry import instances
from subscriptions.models import Subscription
from subscriptions.services.evaluation import changes_process, subscriptions_evaluate_flagged
from tests.helpers import assert_error
from tests.orchestration.helpers import PULL, instance_ids, pull
from tests.orchestration.test_pull_java_api import (
    JAVA_COLLECTOR_REQUEST,
    JAVA_FLAGS_WARNING,
)
from tests.ports import reserved_port
from tests.pull_sources import database_only
from tests.factories import make_instances, make_rules
from tests.store.helpers import http_interface, instance_body
from tests.subscriptions.helpers import (
    feed_skip,
    flags_set_all,
    is_flagged,
    mqtt_notify,
    subscribe,
    subscription_body,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("pull_source")]

ONE, TWO = "ProviderOne|serviceOne|1.0.0", "ProviderTwo|serviceOne|1.0.0"
OTHER, GHOST = "ProviderOne|serviceTwo|1.0.0", "Ghost|serviceOne|1.0.0"
EXPIRY = "2099-01-01T00:00:00Z"


def sr_http(port: int = 9001, **overrides) -> dict:
    return http_interface(properties={
        "accessAddresses": ["192.168.1.10"], "accessPort": port, "basePath": "/one",
        "operations": {"query": {"path": "/query", "method": "GET"}}}, **overrides)


def sr_mqtt() -> dict:
    return {"templateName": "generic_mqtt", "protocol": "tcp", "policy": "NONE",
            "properties": {"accessAddresses": ["192.168.1.10"], "accessPort": 1883,
                           "baseTopic": "one/", "operations": ["query"]}}


def requirement(**fields) -> dict:
    return {"serviceRequirement": {"serviceDefinition": "serviceOne", **fields}}


class PullFromServiceRegistryTests:
    def test_it_returns_the_registry_instance_data(self, api, registry):
        registry.put_instance(ONE, interfaces=[sr_mqtt(), sr_http()],
                              metadata={"unit": "celsius"}, expires_at=EXPIRY)
        make_rules(("CarConsumer1", ONE, 1))
        response = pull(api, requirement())
        assert response.status_code == 200, response.content
        assert response.json()["results"] == [{
            "serviceInstanceId": ONE, "cloudIdentitifer": "LOCAL", "providerName": "ProviderOne",
            "serviceDefinitition": "serviceOne", "version": "1.0.0", "aliveUntil": EXPIRY,
            "metadata": {"unit": "celsius"}, "interfaces": [sr_mqtt(), sr_http()]}]
        assert [call.body for call in registry.lookups()] == [{"instanceIds": [ONE]}]
        assert registry.lookups()[0].authorization == (
            "Bearer SYSTEM//SimpleStoreServiceOrchestration")

    def test_it_filters_registry_instances_by_the_requirements(self, api, registry):
        registry.put_instance(ONE, interfaces=[sr_mqtt()])
        registry.put_instance(TWO, interfaces=[sr_http()], metadata={"unit": "kelvin"})
        make_rules(("CarConsumer1", ONE, 1), ("CarConsumer1", TWO, 2))
        response = pull(api, requirement(interfaceTemplateNames=["generic_http"]))
        assert instance_ids(response) == [TWO]
        assert response.json()["warnings"] == []

    def test_it_drops_expired_registry_instances(self, api, registry):
        registry.put_instance(ONE, interfaces=[sr_http()], expires_at="2020-01-01T00:00:00Z")
        make_rules(("CarConsumer1", ONE, 1))
        assert instance_ids(pull(api, requirement())) == []

    def test_it_looks_up_every_rule_instance_in_one_call(self, api, registry):
        for instance_id in (ONE, TWO, OTHER):
            registry.put_instance(instance_id, interfaces=[sr_http()])
        make_rules(("CarConsumer1", ONE, 1), ("CarConsumer1", TWO, 2),
                   ("CarConsumer1", OTHER, 1), ("CarConsumer1", GHOST, 3))
        assert sorted(instance_ids(pull(api))) == sorted([ONE, TWO, OTHER, GHOST])
        assert [call.body for call in registry.lookups()] == [
            {"instanceIds": sorted([ONE, TWO, OTHER, GHOST])}]

    def test_it_keeps_an_instance_unknown_everywhere_with_the_java_warning(self, api, registry):
        registry.put_instance(ONE, interfaces=[sr_mqtt()])
        make_rules(("CarConsumer1", ONE, 1), ("CarConsumer1", GHOST, 2))
        response = pull(api, requirement(interfaceTemplateNames=["generic_http"]))
        assert instance_ids(response) == [GHOST]
        assert response.json()["warnings"] == ["ignoredFields: [interfaceTemplateNames]"]

    def test_it_takes_ids_the_registry_does_not_know_from_the_local_catalog(self, api,
                                                                            registry):
        make_instances(instance_body("ProviderOne", "serviceOne", "1.0.0",
                                     metadata={"from": "catalog"}),
                       instance_body("ProviderTwo", "serviceOne", "1.0.0",
                                     metadata={"from": "catalog"}))
        registry.put_instance(ONE, interfaces=[sr_http()], metadata={"from": "registry"})
        make_rules(("CarConsumer1", ONE, 1), ("CarConsumer1", TWO, 2))
        results = pull(api, requirement()).json()["results"]
        assert [r["metadata"] for r in results] == [{"from": "registry"}, {"from": "catalog"}]

    def test_it_answers_the_java_collector_request_with_the_registry_interface(self, api,
                                                                               registry):
        registry.put_instance(ONE, interfaces=[sr_mqtt(), sr_http(port=8465)])
        make_rules(("CarConsumer1", ONE, 1))
        response = pull(api, JAVA_COLLECTOR_REQUEST)
        assert response.status_code == 200, response.content
        [result] = response.json()["results"]
        assert result["interfaces"] == [sr_http(port=8465)]
        assert response.json()["warnings"] == [JAVA_FLAGS_WARNING]

    def test_it_drops_registry_instances_under_a_latency_requirement(self, api, registry,
                                                                     settings):
        settings.QOS_ENABLED = True
        registry.put_instance(ONE, interfaces=[sr_http()])
        make_rules(("CarConsumer1", ONE, 1))
        response = pull(api, {**requirement(), "qosRequirements": {"maxLatencyMs": 100}})
        assert instance_ids(response) == []


class RegistryCacheTests:
    def test_it_serves_a_fresh_answer_from_the_cache(self, api, registry):
        registry.put_instance(ONE, interfaces=[sr_http()])
        make_rules(("CarConsumer1", ONE, 1), ("CarConsumer1", GHOST, 2))
        pull(api)
        registry.instances.clear()  # a second lookup would find nothing
        assert instance_ids(pull(api)) == [ONE, GHOST]
        assert len(registry.lookups()) == 1

    def test_it_asks_again_once_the_answer_is_older_than_the_cache_time(self, api, registry,
                                                                        settings):
        settings.SERVICE_REGISTRY_CACHE_SECONDS = 1
        registry.put_instance(ONE, interfaces=[sr_http()], metadata={"v": 1})
        make_rules(("CarConsumer1", ONE, 1))
        pull(api)
        registry.put_instance(ONE, interfaces=[sr_http()], metadata={"v": 2})
        time.sleep(1.1)
        assert pull(api).json()["results"][0]["metadata"] == {"v": 2}
        assert len(registry.lookups()) == 2

    def test_it_asks_only_for_the_ids_not_freshly_cached(self, api, registry):
        registry.put_instance(ONE, interfaces=[sr_http()])
        make_rules(("CarConsumer1", ONE, 1))
        pull(api)
        make_rules(("CarConsumer1", TWO, 2))
        pull(api)
        assert [call.body for call in registry.lookups()] == [{"instanceIds": [ONE]},
                                                              {"instanceIds": [TWO]}]

    def test_it_serves_from_the_cache_while_the_registry_is_down(self, api, registry):
        registry.put_instance(ONE, interfaces=[sr_http()])
        make_rules(("CarConsumer1", ONE, 1))
        pull(api)
        registry.fail_with = 500
        response = pull(api)
        assert instance_ids(response) == [ONE]
        assert response.json()["results"][0]["interfaces"] == [sr_http()]

    def test_it_does_not_cache_with_a_cache_time_of_zero(self, api, registry, settings):
        settings.SERVICE_REGISTRY_CACHE_SECONDS = 0
        make_rules(("CarConsumer1", ONE, 1))
        pull(api)
        pull(api)
        assert len(registry.lookups()) == 2


class RegistryFailureTests:
    def test_it_answers_503_when_the_registry_answers_an_error(self, api, registry):
        registry.fail_with = 500
        make_rules(("CarConsumer1", ONE, 1))
        assert_error(pull(api), 503, "EXTERNAL_SERVER_ERROR",
                     "ServiceRegistry POST /serviceregistry/service-discovery/lookup?verbose="
                     "false answered HTTP 500: Broken", f"POST {PULL}")
        job_writer_flush()  # outside a transaction (snapshot) the job is written behind
        job = OrchestrationJob.objects.get()
        assert (job.status, job.result_count) == (OrchestrationJob.Status.ERROR, 0)
        assert job.message.startswith("ServiceRegistry POST ")

    def test_it_answers_503_when_the_registry_is_unreachable(self, api, registry, settings):
        settings.SERVICE_REGISTRY_URL = f"http://127.0.0.1:{reserved_port()}"
        exchange.opener.cache_clear()
        make_rules(("CarConsumer1", ONE, 1))
        assert_error(pull(api), 503, "EXTERNAL_SERVER_ERROR",
                     "ServiceRegistry POST /serviceregistry/service-discovery/lookup?verbose="
                     "false failed: Connection refused", f"POST {PULL}")

    def test_it_answers_503_for_a_malformed_lookup_answer(self, api, registry):
        registry.put_instance(ONE, interfaces=[{"templateName": "generic_http"}])
        make_rules(("CarConsumer1", ONE, 1))
        assert_error(pull(api), 503, "EXTERNAL_SERVER_ERROR",
                     f"ServiceRegistry lookup answered a malformed instance {ONE}: interface "
                     "templateName, protocol, policy or properties", f"POST {PULL}")

    def test_it_needs_no_registry_without_rules(self, api, registry):
        registry.fail_with = 500
        response = pull(api)
        assert instance_ids(response) == []
        assert registry.calls == []


class StandaloneTests:
    def test_it_never_calls_the_registry_without_its_url(self, api, registry, settings):
        settings.SERVICE_REGISTRY_URL = ""
        registry.put_instance(ONE, interfaces=[sr_http()])
        make_instances(instance_body("ProviderOne", "serviceOne", "1.0.0",
                                     metadata={"from": "catalog"}))
        make_rules(("CarConsumer1", ONE, 1), ("CarConsumer1", GHOST, 2))
        results = pull(api).json()["results"]
        assert [r.get("metadata") for r in results] == [{"from": "catalog"}, None]
        assert registry.calls == []


# Every pull here runs in a subscription's evaluation, inside its transaction, where pull reads
# the database on either source.
@database_only
class SubscriptionEvaluationTests:
    @pytest.fixture
    def subscription(self, api, registry):
        registry.put_instance(ONE, interfaces=[sr_http()], metadata={"v": 1})
        make_rules(("CarConsumer1", ONE, 1))
        subscribe(api, subscription_body("serviceOne", notify=mqtt_notify("t/sr")),
                  consumer="CarConsumer1", query="?trigger=true")
        feed_skip()
        return Subscription.objects.get()

    def test_it_pushes_the_registry_instance_data(self, subscription):
        [delivery] = NotificationDelivery.objects.all()
        [result] = delivery.payload["payload"]["results"]
        assert (result["metadata"], result["interfaces"]) == ({"v": 1}, [sr_http()])

    def test_an_evaluation_reads_what_the_registry_holds_now_not_its_cache(
            self, registry, subscription, settings):
        """The subscribe's lookup cached version 1; the registry has version 2 since. The
        flagged subscription is evaluated with a fresh lookup, so version 2 is pushed (from
        the cache nothing would differ from what was pushed, and nothing would go out)."""
        settings.SERVICE_REGISTRY_CACHE_SECONDS = 3600
        registry.put_instance(ONE, interfaces=[sr_http()], metadata={"v": 2})
        flags_set_all()
        assert subscriptions_evaluate_flagged() == 1
        latest = NotificationDelivery.objects.order_by("-created_at").first()
        assert latest.payload["payload"]["results"][0]["metadata"] == {"v": 2}

    def test_it_keeps_the_subscription_flagged_while_the_registry_is_down(self, registry,
                                                                          subscription):
        instances.cache_clear()
        registry.fail_with = 503
        make_rules(("CarConsumer1", TWO, 2))
        assert changes_process() == 0
        assert is_flagged(Subscription.objects.get())
        registry.fail_with = None
        registry.put_instance(TWO, interfaces=[sr_http()])
        assert changes_process() == 1
        assert not is_flagged(Subscription.objects.get())
        assert [[r["serviceInstanceId"] for r in d.payload["payload"]["results"]]
                for d in NotificationDelivery.objects.order_by("created_at")] == [[ONE],
                                                                                 [ONE, TWO]]

    def test_it_refuses_a_triggered_subscribe_while_the_registry_is_down(self, api, registry):
        registry.fail_with = 500
        make_rules(("CarConsumer1", ONE, 1))
        response = subscribe(api, subscription_body("serviceOne", notify=mqtt_notify("t/sr")),
                             consumer="CarConsumer1", query="?trigger=true")
        assert response.status_code == 503, response.content
        assert response.json()["exceptionType"] == "EXTERNAL_SERVER_ERROR"
        assert not Subscription.objects.exists()
        assert not NotificationDelivery.objects.exists()
