"""MANAGEMENT_POLICY=authorization: ConsumerAuthorization decides who else may manage
(issue 13 item 1), asked over real HTTP at a fake ConsumerAuthorization."""
import pytest
from django.core.cache import cache

from clients import peers
from store.models import Rule
from tests.fake_consumer_authorization import VERIFY, FakeConsumerAuthorization
from tests.helpers import SYSOP, as_system, assert_error
from tests.orchestration.helpers import PULL
from tests.store.helpers import CREATE, QUERY, entry, post

pytestmark = pytest.mark.django_db

NAME = "SimpleStoreServiceOrchestration"
STORE = "serviceOrchestrationSimpleStoreManagement"
REFUSED = "Requester has no management permission"
UNAVAILABLE = f"{REFUSED}: ConsumerAuthorization is not available"
RULE = {"candidates": [entry("TemperatureConsumer", "TemperatureProvider|temperatureInfo|1.0.0",
                             1)]}


@pytest.fixture
def ca(settings):
    fake = FakeConsumerAuthorization()
    settings.MANAGEMENT_POLICY = "authorization"
    settings.CONSUMER_AUTHORIZATION_URL = fake.url
    settings.CONSUMER_AUTHORIZATION_CACHE_SECONDS = 5
    cache.clear()
    peers.forget_locations()
    yield fake
    fake.stop()
    cache.clear()
    peers.forget_locations()


def create(api, system: str = "Manager"):
    return post(api, CREATE, RULE, as_system(system))


class GrantedTests:
    def test_a_system_granted_the_operation_manages_rules(self, api, ca):
        ca.grant("Manager", NAME, STORE, "create")
        response = create(api)
        assert response.status_code == 201, response.content
        assert Rule.objects.get().created_by == "Manager"
        [call] = ca.calls_to(VERIFY)
        assert call.method == "POST"
        assert call.authorization == f"Bearer SYSTEM//{NAME}"
        assert call.body == {"provider": NAME, "consumer": "Manager", "cloud": "LOCAL",
                             "targetType": "SERVICE_DEF", "target": STORE, "scope": "create"}

    def test_a_grant_of_the_whole_service_covers_every_operation(self, api, ca):
        ca.grant("Manager", NAME, STORE)
        assert create(api).status_code == 201
        assert post(api, QUERY, {}, as_system("Manager")).status_code == 200

    def test_the_grant_is_per_operation(self, api, ca):
        ca.grant("Manager", NAME, STORE, "query")
        assert post(api, QUERY, {}, as_system("Manager")).status_code == 200
        assert_error(create(api), 403, "FORBIDDEN", REFUSED, f"POST {CREATE}")
        assert ca.calls_to(VERIFY)[-1].body["scope"] == "create"

    def test_the_alias_paths_ask_for_the_operation_they_perform(self, api, ca):
        """`DELETE .../simple-store/query` removes: it is the `remove` operation."""
        ca.grant("Manager", NAME, STORE, "remove")
        response = api.delete(f"{QUERY}?uuids=8a3c5a39-3c4f-4b55-9d4c-29f0fbb1a3f1",
                              **as_system("Manager"))
        assert response.status_code == 200, response.content
        assert ca.calls_to(VERIFY)[-1].body["scope"] == "remove"

    def test_it_asks_with_the_target_of_each_service(self, api, ca):
        ca.grant("Manager", NAME, "serviceOrchestrationHistoryManagement", "query")
        response = post(api, "/serviceorchestration/orchestration/mgmt/history/query", {},
                        as_system("Manager"))
        assert response.status_code == 200, response.content
        assert ca.calls_to(VERIFY)[-1].body["target"] == "serviceOrchestrationHistoryManagement"


class DeniedTests:
    def test_a_system_without_a_grant_is_refused(self, api, ca):
        ca.grant("Other", NAME, STORE)
        assert_error(create(api), 403, "FORBIDDEN", REFUSED, f"POST {CREATE}")
        assert not Rule.objects.exists()

    def test_operators_and_whitelisted_systems_pass_without_asking(self, api, ca, settings):
        settings.MANAGEMENT_WHITELIST = ["Manager"]
        assert post(api, CREATE, RULE).status_code == 201
        assert post(api, QUERY, {}, as_system("Manager")).status_code == 200
        assert ca.calls_to(VERIFY) == []

    def test_an_unknown_management_path_is_refused_without_asking(self, api, ca):
        path = "/serviceorchestration/orchestration/mgmt/unknown"
        assert_error(api.get(path, **as_system("Manager")), 403, "FORBIDDEN", REFUSED,
                     f"GET {path}")
        assert api.get(path, **SYSOP).status_code == 404
        assert ca.calls_to(VERIFY) == []

    def test_consumer_operations_do_not_ask(self, api, ca):
        assert api.post(PULL, {"serviceRequirement": {"serviceDefinition": "x"}},
                        format="json", **as_system("Manager")).status_code == 200
        assert ca.calls_to(VERIFY) == []


class CacheTests:
    def test_an_answer_is_reused_for_the_cache_time(self, api, ca):
        ca.grant("Manager", NAME, STORE, "query")
        for _ in range(3):
            assert post(api, QUERY, {}, as_system("Manager")).status_code == 200
        assert len(ca.calls_to(VERIFY)) == 1

    def test_a_refusal_is_reused_too(self, api, ca):
        for _ in range(2):
            assert create(api).status_code == 403
        assert len(ca.calls_to(VERIFY)) == 1

    def test_answers_are_per_requester_and_operation(self, api, ca):
        ca.grant("Manager", NAME, STORE)
        post(api, QUERY, {}, as_system("Manager"))
        create(api)
        post(api, QUERY, {}, as_system("Other"))
        assert len(ca.calls_to(VERIFY)) == 3

    def test_zero_seconds_asks_every_time(self, api, ca, settings):
        settings.CONSUMER_AUTHORIZATION_CACHE_SECONDS = 0
        ca.grant("Manager", NAME, STORE, "query")
        for _ in range(2):
            assert post(api, QUERY, {}, as_system("Manager")).status_code == 200
        assert len(ca.calls_to(VERIFY)) == 2

    def test_a_revoked_grant_counts_once_the_answer_expired(self, api, ca):
        ca.grant("Manager", NAME, STORE, "query")
        assert post(api, QUERY, {}, as_system("Manager")).status_code == 200
        ca.revoke_all()
        assert post(api, QUERY, {}, as_system("Manager")).status_code == 200  # cached
        cache.clear()
        assert post(api, QUERY, {}, as_system("Manager")).status_code == 403


class UnavailableTests:
    def test_an_unreachable_ca_refuses_with_the_reason_and_logs_it(self, api, ca, caplog):
        ca.stop()
        with caplog.at_level("WARNING", logger="serviceorchestration.auth"):
            assert_error(create(api), 403, "FORBIDDEN", UNAVAILABLE, f"POST {CREATE}")
        assert "Management permission of Manager for " \
               f"{STORE}/create could not be checked" in caplog.text
        assert "Connection refused" in caplog.text
        assert not Rule.objects.exists()

    @pytest.mark.parametrize("status", [500, 503, 401, 403])
    def test_a_failing_ca_refuses(self, api, ca, status):
        ca.fail_with = status
        assert_error(create(api), 403, "FORBIDDEN", UNAVAILABLE, f"POST {CREATE}")

    def test_an_answer_that_is_no_boolean_refuses(self, api, ca):
        ca.verify = lambda caller, body: (200, {"granted": True})
        assert_error(create(api), 403, "FORBIDDEN", UNAVAILABLE, f"POST {CREATE}")

    def test_an_unavailable_answer_is_not_cached(self, api, ca):
        ca.fail_with = 500
        assert create(api).status_code == 403
        ca.fail_with = None
        ca.grant("Manager", NAME, STORE)
        assert create(api).status_code == 201

    def test_a_slow_ca_times_out(self, api, ca, settings):
        settings.PEER_TIMEOUT_SECONDS = 0.2
        ca.delay = 1
        assert_error(create(api), 403, "FORBIDDEN", UNAVAILABLE, f"POST {CREATE}")


class DiscoveryTests:
    def test_it_finds_the_ca_through_the_service_registry(self, api, ca, settings, registry):
        settings.CONSUMER_AUTHORIZATION_URL = ""
        registry.put_instance("ConsumerAuthorization|authorization|1.0.0",
                              interfaces=ca.service_instances()["authorization"])
        ca.grant("Manager", NAME, STORE, "create")
        assert create(api).status_code == 201
        assert len(ca.calls_to(VERIFY)) == 1
        assert [call.body for call in registry.lookups()] == [
            {"serviceDefinitionNames": ["authorization"]}]

    def test_it_ignores_the_service_of_another_provider(self, api, ca, settings, registry):
        settings.CONSUMER_AUTHORIZATION_URL = ""
        registry.put_instance("Impostor|authorization|1.0.0",
                              interfaces=ca.service_instances()["authorization"])
        assert_error(create(api), 403, "FORBIDDEN", UNAVAILABLE, f"POST {CREATE}")
        assert ca.calls_to(VERIFY) == []

    def test_it_looks_up_again_after_the_ca_moved(self, api, ca, settings, registry):
        settings.CONSUMER_AUTHORIZATION_URL = ""
        registry.put_instance("ConsumerAuthorization|authorization|1.0.0",
                              interfaces=ca.service_instances()["authorization"])
        ca.grant("Manager", NAME, STORE)
        assert create(api).status_code == 201
        moved = FakeConsumerAuthorization()
        try:
            moved.grant("Manager", NAME, STORE)
            registry.put_instance("ConsumerAuthorization|authorization|1.0.0",
                                  interfaces=moved.service_instances()["authorization"])
            ca.stop()
            cache.clear()
            assert create(api).status_code == 403  # met the old address
            query = post(api, QUERY, {}, as_system("Manager"))
            assert query.status_code == 200  # looked up again
            assert len(moved.calls_to(VERIFY)) == 1
        finally:
            moved.stop()
