"""The requester side of the Blacklist filter (BLACKLIST_FILTER; audit §2 "Blacklist filter",
reference-simple §2.3): every request with an identity asks `blacklistDiscovery`/`check` of a
fake Blacklist over real HTTP, found at BLACKLIST_URL or through a fake ServiceRegistry."""
import datetime as dt
from collections.abc import Iterator

import pytest

from clients import exchange, peers
from tests.fake_blacklist import CHECK, QUERY, blacklist  # noqa: F401 (fixture)
from tests.fake_service_registry import FakeServiceRegistry
from tests.helpers import SYSOP, as_system, assert_error
from tests.orchestration.helpers import PULL, pull
from tests.store.helpers import QUERY as STORE_QUERY
from tests.store.helpers import post
from tests.subscriptions.helpers import SUBSCRIBE, subscribe, subscription_body

pytestmark = pytest.mark.django_db

ECHO = "/serviceorchestration/monitor/echo"
UNAVAILABLE = "Blacklist system is not available, the system might be blacklisted"
PULL_BODY = {"serviceRequirement": {"serviceDefinition": "temperatureInfo"}}


def pull_as(api, name: str):
    return pull(api, PULL_BODY, consumer=name)


def store_query_as(api, name: str):
    return post(api, STORE_QUERY, {}, headers=as_system(name))


class BlacklistedRequesterTests:
    def test_it_refuses_a_blacklisted_requester_of_a_pull(self, api, blacklist):
        blacklist.put("BadConsumer")
        assert_error(pull_as(api, "BadConsumer"), 403, "FORBIDDEN",
                     "BadConsumer system is blacklisted", f"POST {PULL}")
        [check] = blacklist.calls_to(CHECK)
        assert (check.method, check.path) == ("GET", f"{CHECK}BadConsumer")
        assert check.authorization == "Bearer SYSTEM//SimpleStoreServiceOrchestration"

    def test_it_refuses_a_blacklisted_manager_before_the_management_check(
            self, api, blacklist, settings):
        settings.MANAGEMENT_WHITELIST = ["StoreAdmin"]
        settings.BLACKLIST_CACHE_SECONDS = 0
        assert store_query_as(api, "StoreAdmin").status_code == 200
        blacklist.put("StoreAdmin")
        blacklist.put("Stranger")
        assert_error(store_query_as(api, "StoreAdmin"), 403, "FORBIDDEN",
                     "StoreAdmin system is blacklisted", f"POST {STORE_QUERY}")
        assert_error(store_query_as(api, "Stranger"), 403, "FORBIDDEN",
                     "Stranger system is blacklisted", f"POST {STORE_QUERY}")

    def test_it_refuses_a_blacklisted_subscriber(self, api, blacklist):
        blacklist.put("TemperatureConsumer")
        assert_error(subscribe(api, subscription_body()), 403, "FORBIDDEN",
                     "TemperatureConsumer system is blacklisted", f"POST {SUBSCRIBE}")

    def test_it_serves_a_requester_that_is_not_listed(self, api, blacklist):
        assert pull_as(api, "GoodConsumer").status_code == 200
        assert [call.path for call in blacklist.calls] == [f"{CHECK}GoodConsumer"]

    def test_it_serves_a_requester_whose_entry_was_revoked_or_expired(self, api, blacklist):
        blacklist.put("Revoked", active=False)
        blacklist.put("Expired", expires_at=dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc))
        assert pull_as(api, "Revoked").status_code == 200
        assert pull_as(api, "Expired").status_code == 200

    def test_it_does_not_filter_when_disabled(self, api, blacklist, settings):
        settings.BLACKLIST_FILTER = False
        blacklist.put("BadConsumer")
        assert pull_as(api, "BadConsumer").status_code == 200
        assert blacklist.calls == []

    def test_it_leaves_views_without_identity_alone(self, api, blacklist):
        blacklist.fail_with = 500
        assert api.get(ECHO).status_code == 200
        assert blacklist.calls == []


class NotCheckedTests:
    def test_it_does_not_ask_about_operators(self, api, blacklist):
        blacklist.put("Sysop")
        blacklist.fail_with = 500
        assert post(api, STORE_QUERY, {}, headers=SYSOP).status_code == 200
        assert blacklist.calls == []

    def test_it_does_not_ask_about_the_blacklist_itself(self, api, blacklist):
        blacklist.put("Blacklist")
        assert pull_as(api, "Blacklist").status_code == 200
        assert blacklist.calls == []

    @pytest.mark.parametrize("name", ["ServiceRegistry", "Authentication",
                                      "ConsumerAuthorization", "DynamicServiceOrchestration"])
    def test_it_does_not_ask_about_the_default_excluded_systems(self, api, blacklist, name):
        blacklist.put(name)
        assert pull_as(api, name).status_code == 200
        assert blacklist.calls == []

    def test_it_does_not_ask_about_configured_excluded_systems(self, api, blacklist, settings):
        settings.BLACKLIST_EXCLUDE = ["TrustedConsumer"]
        blacklist.put("TrustedConsumer")
        blacklist.put("ServiceRegistry")
        assert pull_as(api, "TrustedConsumer").status_code == 200
        assert blacklist.calls == []
        assert_error(pull_as(api, "ServiceRegistry"), 403, "FORBIDDEN",
                     "ServiceRegistry system is blacklisted", f"POST {PULL}")


class BlacklistFailureTests:
    @pytest.mark.parametrize("status", [500, 404, 400])
    def test_it_refuses_everybody_when_the_blacklist_fails_and_force_is_on(
            self, api, blacklist, status):
        blacklist.fail_with = status
        assert_error(pull_as(api, "GoodConsumer"), 403, "FORBIDDEN", UNAVAILABLE,
                     f"POST {PULL}")

    def test_it_refuses_everybody_when_the_blacklist_is_unreachable_and_force_is_on(
            self, api, blacklist):
        blacklist.stop()
        assert_error(pull_as(api, "GoodConsumer"), 403, "FORBIDDEN", UNAVAILABLE,
                     f"POST {PULL}")

    def test_it_serves_everybody_when_the_blacklist_fails_and_force_is_off(
            self, api, blacklist, settings):
        settings.BLACKLIST_FORCE = False
        blacklist.fail_with = 500
        assert pull_as(api, "GoodConsumer").status_code == 200
        blacklist.stop()
        assert pull_as(api, "GoodConsumer").status_code == 200

    def test_it_refuses_everybody_when_the_blacklist_answers_not_found(self, api, blacklist,
                                                                        settings):
        settings.BLACKLIST_URL = blacklist.url + "/nowhere"  # 404 at every path
        assert_error(pull_as(api, "GoodConsumer"), 403, "FORBIDDEN", UNAVAILABLE,
                     f"POST {PULL}")

    @pytest.mark.parametrize("status, exception_type, message", [
        (403, "FORBIDDEN", "Requester has no management permission"),
        (401, "AUTH", "Invalid authorization header")])
    @pytest.mark.parametrize("force", [True, False])
    def test_it_passes_a_refusal_of_the_blacklist_through(self, api, blacklist, settings, force,
                                                          status, exception_type, message):
        settings.BLACKLIST_FORCE = force
        blacklist.refuse_with = status
        assert_error(pull_as(api, "GoodConsumer"), status, exception_type, message,
                     f"POST {PULL}")


class CacheTests:
    def test_it_asks_once_per_name_within_the_cache_period(self, api, blacklist, settings):
        settings.BLACKLIST_CACHE_SECONDS = 60
        blacklist.put("BadConsumer")
        for _ in range(2):
            assert pull_as(api, "GoodConsumer").status_code == 200
            assert pull_as(api, "BadConsumer").status_code == 403
        assert [call.path for call in blacklist.calls_to(CHECK)] == [
            f"{CHECK}GoodConsumer", f"{CHECK}BadConsumer"]

    def test_it_asks_every_time_without_a_cache_period(self, api, blacklist, settings):
        settings.BLACKLIST_CACHE_SECONDS = 0
        for _ in range(2):
            assert pull_as(api, "GoodConsumer").status_code == 200
        assert len(blacklist.calls_to(CHECK)) == 2

    def test_it_asks_again_after_a_failure(self, api, blacklist, settings):
        settings.BLACKLIST_CACHE_SECONDS = 60
        blacklist.fail_with = 500
        assert pull_as(api, "GoodConsumer").status_code == 403
        blacklist.fail_with = None
        assert pull_as(api, "GoodConsumer").status_code == 200
        assert len(blacklist.calls_to(CHECK)) == 2
        assert blacklist.calls_to(QUERY) == []


@pytest.fixture
def registry(settings) -> Iterator[FakeServiceRegistry]:
    fake = FakeServiceRegistry()
    settings.SERVICE_REGISTRY_URL = fake.url
    exchange.opener.cache_clear()
    peers.forget_locations()
    yield fake
    fake.stop()
    peers.forget_locations()


class DiscoveryTests:
    def test_it_finds_the_blacklist_through_the_service_registry(self, api, blacklist, registry,
                                                                 settings):
        settings.BLACKLIST_URL = ""
        for definition, interfaces in blacklist.service_instances().items():
            registry.put_instance(f"Blacklist|{definition}|5.0.0", interfaces=interfaces)
        blacklist.put("BadConsumer")
        assert_error(pull_as(api, "BadConsumer"), 403, "FORBIDDEN",
                     "BadConsumer system is blacklisted", f"POST {PULL}")
        assert [call.body for call in registry.lookups()] == [
            {"serviceDefinitionNames": ["blacklistDiscovery"]}]
        # Registered as the Java Blacklist registers it (`/check`): the name is appended.
        assert [call.path for call in blacklist.calls] == ["/blacklist/check/BadConsumer"]

    def test_it_prefers_the_explicit_url(self, api, blacklist, registry):
        blacklist.put("BadConsumer")
        assert pull_as(api, "BadConsumer").status_code == 403
        assert registry.lookups() == []

    def test_it_counts_a_blacklist_the_registry_does_not_know_as_unavailable(
            self, api, blacklist, registry, settings):
        settings.BLACKLIST_URL = ""
        assert_error(pull_as(api, "GoodConsumer"), 403, "FORBIDDEN", UNAVAILABLE,
                     f"POST {PULL}")
        assert blacklist.calls == []
