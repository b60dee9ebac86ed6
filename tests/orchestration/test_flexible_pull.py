"""Pull under the flexible store (issue 33, docs/flexible-store.md): the consumer's flexible
rules select instances of the ServiceRegistry (a fake over real HTTP on the loopback) and of
the local catalog; the rest of pull is the simple store's."""
import pytest

from clients import peers
from notifications.models import NotificationDelivery
from orchestration.pull import selectors
from orchestration.pull.flexible import flexible_selection
from serviceregistry.polling import instances_poll
from store.models import FlexibleRule
from store.services.flexible_rules import FlexibleRuleDraft, flexible_rule_create_many
from subscriptions.models import Subscription
from subscriptions.selectors import live_targets
from subscriptions.services.evaluation import changes_process
from subscriptions.tasks import poll_instances_task
from tests.factories import make_instances, make_rules
from tests.fake_consumer_authorization import FakeConsumerAuthorization
from tests.helpers import assert_error
from tests.orchestration.helpers import PULL, instance_ids, pull
from tests.pull_sources import database_only, reads_no_source
from tests.store.helpers import http_interface, instance_body, mqtt_interface
from tests.subscriptions.helpers import feed_skip, mqtt_notify, subscribe, subscription_body

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("pull_source")]

ONE, TWO = "ProviderOne|serviceOne|1.0.0", "ProviderTwo|serviceOne|2.1.0"
OTHER = "ProviderOne|serviceTwo|1.0.0"


@pytest.fixture(autouse=True)
def flexible(settings) -> None:
    settings.ORCHESTRATION_STRATEGY = "flexible-store"


def rules(*drafts: dict) -> None:
    flexible_rule_create_many(drafts=[FlexibleRuleDraft(**draft) for draft in drafts],
                              requester="Sysop", limit=None)


def rule(**fields) -> dict:
    return {"consumer": "CarConsumer1", "service_definition": "serviceOne", **fields}


def offer(registry, instance_id: str, *, interfaces=None, provider_metadata=None, **fields):
    registry.put_instance(instance_id, interfaces=interfaces or [http_interface()],
                          provider_metadata=provider_metadata, **fields)


def requirement(**fields) -> dict:
    return {"serviceRequirement": {"serviceDefinition": "serviceOne", **fields}}


class FlexibleSelectionTests:
    def test_a_rule_selects_the_registry_instances_of_its_provider_complete(self, api,
                                                                            registry):
        offer(registry, ONE, metadata={"unit": "celsius"}, expires_at="2099-01-01T00:00:00Z")
        offer(registry, TWO)
        rules(rule(provider="ProviderOne", priority=1))
        response = pull(api, requirement())
        assert response.status_code == 200, response.content
        assert response.json()["results"] == [{
            "serviceInstanceId": ONE, "cloudIdentitifer": "LOCAL", "providerName": "ProviderOne",
            "serviceDefinitition": "serviceOne", "version": "1.0.0",
            "aliveUntil": "2099-01-01T00:00:00Z", "metadata": {"unit": "celsius"},
            "interfaces": [http_interface()]}]

    def test_providers_are_selected_by_their_system_metadata(self, api, registry):
        offer(registry, ONE, provider_metadata={"vendor": "acme", "line": 3})
        offer(registry, TWO, provider_metadata={"vendor": "other"})
        rules(rule(provider_metadata=[{"vendor": "acme", "line": {"op": "GREATER_THAN",
                                                                  "value": 2}}]))
        assert instance_ids(pull(api, requirement())) == [ONE]

    def test_name_and_metadata_of_the_provider_must_both_hold(self, api, registry):
        offer(registry, ONE, provider_metadata={"vendor": "other"})
        rules(rule(provider="ProviderOne", provider_metadata=[{"vendor": "acme"}]))
        assert instance_ids(pull(api, requirement())) == []

    def test_consumers_are_selected_by_their_system_metadata(self, api, registry):
        offer(registry, ONE)
        registry.put_system("CarConsumer1", {"site": "plant1"})
        registry.put_system("CarConsumer2", {"site": "plant2"})
        rules({"consumer_metadata": [{"site": "plant1"}], "provider": "ProviderOne",
               "service_definition": "serviceOne"})
        assert instance_ids(pull(api, requirement())) == [ONE]
        assert instance_ids(pull(api, requirement(), consumer="CarConsumer2")) == []
        assert instance_ids(pull(api, requirement(), consumer="Unknown")) == []

    def test_removed_rules_no_longer_apply(self, api, registry):
        """On the snapshot, a rule selecting consumers by metadata reaches pull through the
        feed's pseudo instance `*|<definition>|*`, a named one through its consumer."""
        offer(registry, ONE)
        offer(registry, TWO)
        registry.put_system("CarConsumer1", {"site": "plant1"})
        rules({"consumer_metadata": [{"site": "plant1"}], "provider": "ProviderOne",
               "service_definition": "serviceOne", "priority": 1},
              rule(provider="ProviderTwo", priority=2))
        assert instance_ids(pull(api, requirement())) == [ONE, TWO]
        FlexibleRule.objects.filter(consumer__isnull=True).delete()
        assert instance_ids(pull(api, requirement())) == [TWO]
        FlexibleRule.objects.all().delete()
        assert instance_ids(pull(api, requirement())) == []

    def test_the_consumer_metadata_is_looked_up_once_and_only_when_needed(self, api, registry):
        offer(registry, ONE)
        registry.put_system("CarConsumer1", {"site": "plant1"})
        rules(rule(provider="ProviderOne"))
        pull(api, requirement())
        assert not [c for c in registry.calls if "system-discovery/lookup" in c.path]
        rules({"consumer_metadata": [{"site": "plant1"}], "provider": "ProviderTwo",
               "service_definition": "serviceOne"})
        pull(api, requirement())
        pull(api, requirement())
        assert len([c for c in registry.calls if "system-discovery/lookup" in c.path]) == 1

    def test_interface_template_service_metadata_and_versions_narrow_the_selection(
            self, api, registry):
        offer(registry, ONE, interfaces=[mqtt_interface(), http_interface()],
              metadata={"unit": "celsius"})
        offer(registry, TWO, metadata={"unit": "kelvin"})
        offer(registry, "ProviderThree|serviceOne|3.0.0", metadata={"unit": "celsius"})
        rules(rule(provider_metadata=[{}], interface_template="generic_mqtt"))
        [result] = pull(api, requirement()).json()["results"]
        assert (result["serviceInstanceId"], result["interfaces"]) == (ONE, [mqtt_interface()])
        rules(rule(provider_metadata=[{}], service_metadata=[{"unit": "celsius"}],
                   min_version="2.0", max_version="3.0.0", priority=2))
        # the second rule is the better one (2, against the default priority of the first)
        assert instance_ids(pull(api, requirement())) == ["ProviderThree|serviceOne|3.0.0", ONE]

    def test_rules_in_priority_order_each_instance_once(self, api, registry):
        offer(registry, ONE)
        offer(registry, TWO)
        offer(registry, OTHER)
        rules(rule(provider="ProviderOne", priority=5),
              rule(provider_metadata=[{}], priority=2),
              rule(provider="ProviderOne", service_definition="serviceTwo", priority=1))
        assert instance_ids(pull(api, {})) == [OTHER, ONE, TWO]
        selection = flexible_selection(consumer="CarConsumer1", service_definition=None,
                                       source=selectors.pull_source())
        assert [(r.service_instance_id, r.priority) for r, _ in selection] == [
            (OTHER, 1), (ONE, 2), (TWO, 2)]
        assert instance_ids(pull(api, requirement())) == [ONE, TWO]

    def test_rules_of_other_consumers_do_not_apply(self, api, registry):
        offer(registry, ONE)
        rules(rule(consumer="CarConsumer2", provider="ProviderOne"))
        assert instance_ids(pull(api, requirement())) == []

    def test_the_local_catalog_supplies_what_the_registry_does_not_know(self, api, registry):
        offer(registry, ONE)
        make_instances(instance_body("ProviderOne", "serviceOne", "1.0.0",
                                     metadata={"from": "catalog"}),
                       instance_body("ProviderOne", "serviceOne", "1.5.0"))
        rules(rule(provider="ProviderOne"))
        response = pull(api, requirement())
        assert instance_ids(response) == [ONE, "ProviderOne|serviceOne|1.5.0"]
        assert response.json()["results"][0]["metadata"] == {}

    def test_without_a_service_registry_the_local_catalog_alone(self, api):
        make_instances(instance_body("ProviderOne", "serviceOne", "1.0.0"))
        rules(rule(provider="ProviderOne"),
              rule(provider_metadata=[{"vendor": "acme"}], priority=1))
        assert instance_ids(pull(api, requirement())) == [ONE]

    def test_the_definitions_lookup_is_cached(self, api, registry):
        offer(registry, ONE)
        rules(rule(provider="ProviderOne"))
        pull(api, requirement())
        pull(api, requirement())
        assert len(registry.lookups()) == 1


class FlexiblePullRequestTests:
    def test_the_request_requirements_still_apply(self, api, registry):
        offer(registry, ONE, metadata={"unit": "celsius"})
        offer(registry, TWO, metadata={"unit": "kelvin"})
        rules(rule(provider_metadata=[{}]))
        assert instance_ids(pull(api, requirement(
            metadataRequirements=[{"unit": "kelvin"}]))) == [TWO]
        assert instance_ids(pull(api, requirement(versions=["1.0.0"]))) == [ONE]

    def test_matchmaking_and_preferred_providers(self, api, registry):
        offer(registry, ONE)
        offer(registry, TWO)
        rules(rule(provider_metadata=[{}]))
        assert instance_ids(pull(api, requirement(preferredProviders=["ProviderTwo"]) | {
            "orchestrationFlags": {"MATCHMAKING": True}})) == [TWO]
        assert instance_ids(pull(api, requirement(preferredProviders=["Nobody"]) | {
            "orchestrationFlags": {"ONLY_PREFERRED": True}})) == []

    def test_the_java_collector_request_gets_an_interface_to_bind_to(self, api, registry):
        offer(registry, ONE, interfaces=[mqtt_interface(), http_interface()])
        rules(rule(provider="ProviderOne"))
        response = pull(api, {
            "serviceRequirement": {"serviceDefinition": "serviceOne",
                                   "interfaceTemplateNames": ["generic_http"],
                                   "preferredProviders": ["ProviderOne"]},
            "orchestrationFlags": {"MATCHMAKING": True, "ALLOW_INTERCLOUD": False,
                                   "ALLOW_TRANSLATION": False, "ONLY_PREFERRED": True}})
        assert response.json()["results"][0]["interfaces"] == [http_interface()]

    def test_the_registry_failing_is_a_503(self, api, registry):
        rules(rule(provider="ProviderOne"))
        registry.stop()
        response = pull(api, requirement())
        assert response.status_code == 503, response.content
        assert response.json()["exceptionType"] == "EXTERNAL_SERVER_ERROR"


def pushed() -> list[list[str]]:
    """The instance ids of every push so far, oldest first."""
    return [[r["serviceInstanceId"] for r in d.payload["payload"]["results"]]
            for d in NotificationDelivery.objects.order_by("created_at")]


# The evaluations run inside their transaction, where pull reads the database on either source.
@database_only
class FlexiblePushTests:
    """Subscriptions push on every change that alters a flexible result: a rule (naming the
    consumer or selecting consumers by metadata), an instance of the ServiceRegistry (polled)."""

    @pytest.fixture
    def subscription(self, api, registry):
        offer(registry, ONE)
        rules(rule(provider="ProviderOne"))
        subscribe(api, subscription_body("serviceOne", notify=mqtt_notify("t/flex")),
                  consumer="CarConsumer1", query="?trigger=true")
        feed_skip()
        return Subscription.objects.get()

    def test_a_rule_naming_the_consumer_pushes(self, registry, subscription):
        offer(registry, TWO)
        rules(rule(provider="ProviderTwo", priority=1))
        assert changes_process() == 1
        assert pushed() == [[ONE], [TWO, ONE]]

    def test_a_rule_selecting_consumers_by_metadata_pushes(self, registry, subscription):
        offer(registry, TWO)
        registry.put_system("CarConsumer1", {"site": "plant1"})
        rules({"consumer_metadata": [{"site": "plant1"}], "provider": "ProviderTwo",
               "service_definition": "serviceOne", "priority": 1})
        assert changes_process() == 1
        assert pushed() == [[ONE], [TWO, ONE]]

    def test_a_rule_of_another_service_pushes_nothing(self, registry, subscription):
        offer(registry, OTHER)
        rules({"consumer_metadata": [{}], "provider_metadata": [{}],
               "service_definition": "serviceTwo"})
        changes_process()
        assert pushed() == [[ONE]]

    def test_a_removed_rule_pushes(self, registry, subscription):
        FlexibleRule.objects.all().delete()
        assert changes_process() == 1
        assert pushed() == [[ONE], []]

    def test_a_consumers_changed_system_metadata_is_noticed_by_the_poll(self, registry,
                                                                        subscription):
        offer(registry, TWO)
        registry.put_system("CarConsumer1", {"site": "plant2"})
        rules({"consumer_metadata": [{"site": "plant1"}], "provider": "ProviderTwo",
               "service_definition": "serviceOne", "priority": 1})
        assert poll_instances_task() >= 1  # seen for the first time
        changes_process()
        assert pushed() == [[ONE]]  # plant2: the metadata rule does not apply
        registry.put_system("CarConsumer1", {"site": "plant1"})
        assert poll_instances_task() == 1  # a change of the consumer in the feed
        assert changes_process() == 1
        assert pushed() == [[ONE], [TWO, ONE]]
        assert poll_instances_task() == 0  # unchanged since

    def test_a_new_registry_instance_is_noticed_by_the_poll(self, registry, subscription,
                                                            settings):
        rules(rule(provider_metadata=[{"vendor": "acme"}], priority=1))
        changes_process()  # nothing selected by the new rule yet: nothing pushed
        assert pushed() == [[ONE]]
        offer(registry, TWO, provider_metadata={"vendor": "acme"})
        assert instances_poll(live_targets) >= 1
        assert changes_process() == 1
        assert pushed() == [[ONE], [TWO, ONE]]
        registry.instances.pop(TWO)
        assert instances_poll(live_targets) == 1
        assert changes_process() == 1
        assert pushed()[-1] == [ONE]


class FlexibleFlagTests:
    """The flags the flexible store does not support, answered as the Java dynamic
    orchestrator answers them with other clouds and translation disabled."""

    @reads_no_source  # refused before pull reads its rules
    @pytest.mark.parametrize("flags, fields, message", [
        ({"ONLY_INTERCLOUD": True}, {},
         "ONLY_INTERCLOUD flag is present, but intercloud orchestration is not enabled"),
        ({"ALLOW_INTERCLOUD": True}, {},
         "Exactly one operation must be defined when only inter-cloud orchestration is "
         "allowed"),
        ({"ALLOW_TRANSLATION": True}, {"operations": ["query", "other"]},
         "Exactly one operation must be defined when translation is allowed"),
        ({"ALLOW_TRANSLATION": True}, {"operations": ["query"]},
         "Interface template name(s) must be defined when translation is allowed"),
        ({"ONLY_PREFERRED": True}, {},
         "ONLY_PREFERRED flag is present, but no preferred provider is defined"),
    ])
    def test_it_refuses_what_the_dynamic_orchestrator_refuses(self, api, registry, flags,
                                                              fields, message):
        rules(rule(provider="ProviderOne"))
        response = pull(api, requirement(**fields) | {"orchestrationFlags": flags})
        assert_error(response, 400, "INVALID_PARAMETER", message, f"POST {PULL}")

    def test_the_others_are_served_locally_without_warnings(self, api, registry):
        offer(registry, ONE)
        rules(rule(provider="ProviderOne"))
        response = pull(api, requirement(operations=["query"],
                                         interfaceTemplateNames=["generic_http"]) | {
            "orchestrationFlags": {"ALLOW_INTERCLOUD": True, "ALLOW_TRANSLATION": True,
                                   "MATCHMAKING": True}})
        assert response.status_code == 200, response.content
        assert (instance_ids(response), response.json()["warnings"]) == ([ONE], [])
        collector = pull(api, requirement() | {"orchestrationFlags": {
            "MATCHMAKING": True, "ALLOW_INTERCLOUD": False, "ALLOW_TRANSLATION": False}})
        assert collector.json()["warnings"] == []


@pytest.fixture
def ca(settings):
    """A fake ConsumerAuthorization (its check recorded against the real one) filtering."""
    peers.forget_locations()
    fake = FakeConsumerAuthorization()
    settings.CONSUMER_AUTHORIZATION_URL = fake.url
    settings.CONSUMER_AUTHORIZATION_FILTER = True
    yield fake
    fake.stop()
    peers.forget_locations()


def checks(ca: FakeConsumerAuthorization) -> list:
    return [call.body["list"] for call in ca.calls if call.path.endswith("/mgmt/check")]


class FlexibleAuthorizationTests:
    """With CONSUMER_AUTHORIZATION_FILTER, only providers that granted the consumer their
    service in ConsumerAuthorization are offered, as the Java dynamic orchestrator does."""

    def test_it_offers_only_granted_providers_in_one_check(self, api, registry, ca):
        offer(registry, ONE)
        offer(registry, TWO)
        rules(rule(provider_metadata=[{}]))
        ca.grant("CarConsumer1", "ProviderTwo", "serviceOne")
        assert instance_ids(pull(api, requirement())) == [TWO]
        [questions] = checks(ca)
        assert [(q["provider"], q["consumer"], q["target"], q["scope"]) for q in questions] == [
            ("ProviderOne", "CarConsumer1", "serviceOne", None),
            ("ProviderTwo", "CarConsumer1", "serviceOne", None)]

    def test_each_requested_operation_must_be_granted(self, api, registry, ca):
        offer(registry, ONE)
        rules(rule(provider="ProviderOne"))
        ca.grant("CarConsumer1", "ProviderOne", "serviceOne", scope="query")
        assert instance_ids(pull(api, requirement(operations=["query"]))) == [ONE]
        assert instance_ids(pull(api, requirement(operations=["query", "write"]))) == []

    def test_without_candidates_it_asks_nothing(self, api, registry, ca):
        rules(rule(provider="ProviderOne"))
        assert instance_ids(pull(api, requirement())) == []
        assert checks(ca) == []

    def test_a_failing_check_is_a_503(self, api, registry, ca):
        offer(registry, ONE)
        rules(rule(provider="ProviderOne"))
        ca.stop()
        response = pull(api, requirement())
        assert response.status_code == 503, response.content

    def test_a_malformed_check_answer_is_a_503(self, api, registry, ca):
        offer(registry, ONE)
        rules(rule(provider="ProviderOne"))
        ca.answer = lambda *args: (200, {"entries": [{"provider": {}, "target": []}]})
        response = pull(api, requirement())
        assert response.status_code == 503, response.content

    def test_the_simple_store_does_not_check(self, api, registry, ca, settings):
        settings.ORCHESTRATION_STRATEGY = "simple-store"
        offer(registry, ONE)
        make_rules(("CarConsumer1", ONE, 1))
        assert instance_ids(pull(api, requirement())) == [ONE]
        assert checks(ca) == []
