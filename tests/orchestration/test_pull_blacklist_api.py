"""The provider side of the Blacklist filter in pull (reference-dynamic §9.5, scenarios 26–30
of §15 D): the providers of the candidates are looked up with `blacklistManagement`/`query` of
a fake Blacklist over real HTTP, paged, and the listed ones are dropped before anything is
reserved or issued for them."""
import datetime as dt
import json
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from django.utils import timezone

from orchestration.history.job_writer import job_writer_flush
from orchestration.models import AuthorizationToken, OrchestrationJob, OrchestrationLock
from orchestration.pull.normalization import parse_orchestration_request
from orchestration.pull.services import orchestrate_preview
from clients import exchange
from serviceregistry import instances
from tests.factories import make_instances, make_rules
from tests.fake_blacklist import CHECK, QUERY, FakeBlacklist, blacklist  # noqa: F401 (fixture)
from tests.fake_service_registry import FakeServiceRegistry
from tests.helpers import assert_error
from tests.orchestration.helpers import PULL, instance_ids, pull
from tests.pull_sources import reads_no_source
from tests.store.helpers import http_interface, instance_body

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("pull_source")]

CONSUMER = "TestConsumer"
PROVIDERS = [f"TestProvider{n}" for n in range(1, 5)]
P1, P2, P3, P4 = (f"{provider}|testService|1.0.0" for provider in PROVIDERS)
BODY = {"serviceRequirement": {"serviceDefinition": "testService"}}
DEFAULT_EXCLUDE = ["ServiceRegistry", "Authentication", "ConsumerAuthorization",
                   "DynamicServiceOrchestration"]


def first_page(names: list[str]) -> dict:
    return {"pagination": {"page": None, "size": None, "direction": None, "sortField": None},
            "systemNames": names, "mode": None, "issuers": None, "revokers": None,
            "reason": None}


def without_alives_at(body: dict) -> dict:
    assert timezone.now() - dt.timedelta(seconds=30) <= dt.datetime.fromisoformat(
        body["alivesAt"].replace("Z", "+00:00")) <= timezone.now()
    return {key: value for key, value in body.items() if key != "alivesAt"}


@pytest.fixture
def registry(settings) -> Iterator[FakeServiceRegistry]:
    """A fake ServiceRegistry holding P1..P4, which the consumer's rules name."""
    fake = FakeServiceRegistry()
    settings.SERVICE_REGISTRY_URL = fake.url
    settings.SERVICE_REGISTRY_CACHE_SECONDS = 10
    exchange.opener.cache_clear()
    instances.cache_clear()
    for instance_id in (P1, P2, P3, P4):
        fake.put_instance(instance_id, interfaces=[http_interface()])
    make_rules(*((CONSUMER, instance_id, n) for n, instance_id in
                 enumerate((P1, P2, P3, P4), start=1)))
    yield fake
    fake.stop()
    instances.cache_clear()


@pytest.fixture
def consumer_excluded(settings) -> None:
    """The consumer is not asked about, so that a failing Blacklist reaches the pull."""
    settings.BLACKLIST_EXCLUDE = [*DEFAULT_EXCLUDE, CONSUMER]


def pull_ids(api) -> list[str]:
    return instance_ids(pull(api, BODY, consumer=CONSUMER))


class BlacklistScenarioTests:
    def test_26_it_reads_every_page_and_drops_every_listed_provider(self, api, registry,
                                                                    blacklist):
        blacklist.page_size = 2
        for name in PROVIDERS:
            blacklist.put(name)
        assert pull_ids(api) == []
        first, second = (call.body for call in blacklist.calls_to(QUERY))
        assert without_alives_at(first) == first_page(PROVIDERS)
        assert without_alives_at(second) == {
            **first_page(PROVIDERS),
            "pagination": {"page": 1, "size": 2, "direction": None, "sortField": None}}
        job_writer_flush()  # outside a transaction (snapshot) the job is written behind
        job = OrchestrationJob.objects.get()
        assert (job.status, job.result_count) == (OrchestrationJob.Status.DONE, 0)

    def test_27_it_does_not_ask_about_excluded_providers(self, api, registry, blacklist,
                                                         settings):
        settings.BLACKLIST_EXCLUDE = [*DEFAULT_EXCLUDE, "TestProvider3"]
        for name in ("TestProvider1", "TestProvider2", "TestProvider4"):
            blacklist.put(name)
        blacklist.put("TestProvider3")  # listed, but excluded from the filter
        assert pull_ids(api) == [P3]
        [query] = blacklist.calls_to(QUERY)
        assert query.body["systemNames"] == ["TestProvider1", "TestProvider2", "TestProvider4"]

    @pytest.mark.parametrize("broken", ["failing", "unreachable"])
    def test_28_it_drops_every_provider_when_the_blacklist_fails_and_force_is_on(
            self, api, registry, blacklist, consumer_excluded, broken):
        if broken == "failing":
            blacklist.fail_with = 500
        else:
            blacklist.stop()
        assert pull_ids(api) == []

    @pytest.mark.parametrize("broken", ["failing", "unreachable"])
    def test_29_it_keeps_every_provider_when_the_blacklist_fails_and_force_is_off(
            self, api, registry, blacklist, consumer_excluded, settings, broken):
        settings.BLACKLIST_FORCE = False
        if broken == "failing":
            blacklist.fail_with = 500
        else:
            blacklist.stop()
        blacklist.put("TestProvider1")
        assert pull_ids(api) == [P1, P2, P3, P4]

    @pytest.mark.parametrize("status, exception_type, message", [
        (403, "FORBIDDEN", "Requester has no management permission"),
        (401, "AUTH", "Invalid authorization header")])
    @pytest.mark.parametrize("force", [True, False])
    def test_30_it_fails_the_pull_with_the_refusal_of_the_blacklist(
            self, api, registry, blacklist, consumer_excluded, settings, force, status,
            exception_type, message):
        settings.BLACKLIST_FORCE = force
        blacklist.refuse_with = status
        assert_error(pull(api, BODY, consumer=CONSUMER), status, exception_type, message,
                     f"POST {PULL}")
        job_writer_flush()  # outside a transaction (snapshot) the job is written behind
        job = OrchestrationJob.objects.get()
        assert (job.status, job.message) == (OrchestrationJob.Status.ERROR, message)


class ProviderFilterTests:
    def test_it_keeps_the_providers_that_are_not_listed_in_their_order(self, api, registry,
                                                                       blacklist):
        blacklist.put("TestProvider2")
        blacklist.put("TestProvider4", active=False)  # revoked: not returned alive now
        assert pull_ids(api) == [P1, P3, P4]

    def test_it_does_not_count_an_entry_that_expired(self, api, registry, blacklist):
        blacklist.put("TestProvider2", expires_at=timezone.now() - dt.timedelta(minutes=1))
        assert pull_ids(api) == [P1, P2, P3, P4]

    def test_it_does_not_query_without_the_filter(self, api, registry, blacklist, settings):
        settings.BLACKLIST_FILTER = False
        blacklist.put("TestProvider2")
        assert pull_ids(api) == [P1, P2, P3, P4]
        assert blacklist.calls == []

    def test_it_does_not_query_without_candidates(self, api, blacklist):
        assert instance_ids(pull(api, BODY, consumer=CONSUMER)) == []
        assert blacklist.calls_to(QUERY) == []

    def test_it_prefers_among_the_providers_that_are_not_listed(self, api, registry, blacklist):
        blacklist.put("TestProvider3")
        body = {"serviceRequirement": {"serviceDefinition": "testService",
                                       "preferredProviders": ["TestProvider3"]},
                "orchestrationFlags": {"MATCHMAKING": True}}
        assert instance_ids(pull(api, body, consumer=CONSUMER)) == [P1]

    def test_it_reserves_nothing_and_issues_nothing_for_listed_providers(self, api, blacklist):
        token_interface = http_interface(policy="TIME_LIMITED_TOKEN_AUTH")
        make_instances(instance_body("Listed", "heater", metadata={"allowExclusivity": "120"},
                                     interfaces=[token_interface]),
                       instance_body("Allowed", "heater", metadata={"allowExclusivity": "120"},
                                     interfaces=[token_interface]))
        make_rules((CONSUMER, "Listed|heater|1.0.0", 1), (CONSUMER, "Allowed|heater|1.0.0", 2))
        blacklist.put("Listed")
        body = {"serviceRequirement": {"serviceDefinition": "heater"},
                "exclusivityDuration": 60}
        assert instance_ids(pull(api, body, consumer=CONSUMER)) == ["Allowed|heater|1.0.0"]
        assert [lock.service_instance_id for lock in OrchestrationLock.objects.all()] == [
            "Allowed|heater|1.0.0"]
        assert {token.provider for token in AuthorizationToken.objects.all()} == {"Allowed"}

    def test_it_filters_a_preview_too(self, registry, blacklist):
        blacklist.put("TestProvider1")
        request = parse_orchestration_request(BODY)
        preview = orchestrate_preview(consumer=CONSUMER, request=request, now=timezone.now())
        assert [entry.service_instance_id for entry in preview.results] == [P2, P3, P4]
        assert OrchestrationJob.objects.count() == 0


class ProviderCacheTests:
    def test_it_asks_only_about_providers_not_answered_within_the_cache_period(
            self, api, registry, blacklist, settings):
        settings.BLACKLIST_CACHE_SECONDS = 60
        blacklist.put("TestProvider2")
        assert pull_ids(api) == [P1, P3, P4]
        assert pull_ids(api) == [P1, P3, P4]
        registry.put_instance("TestProvider5|testService|1.0.0", interfaces=[http_interface()])
        make_rules((CONSUMER, "TestProvider5|testService|1.0.0", 5))
        blacklist.put("TestProvider5")
        instances.cache_clear()
        assert pull_ids(api) == [P1, P3, P4]
        assert [call.body["systemNames"] for call in blacklist.calls_to(QUERY)] == [
            PROVIDERS, ["TestProvider5"]]
        assert len(blacklist.calls_to(CHECK)) == 1

    def test_it_asks_again_without_a_cache_period(self, api, registry, blacklist, settings):
        settings.BLACKLIST_CACHE_SECONDS = 0
        pull_ids(api)
        pull_ids(api)
        assert len(blacklist.calls_to(QUERY)) == 2


class ProviderDiscoveryTests:
    def test_it_finds_the_blacklist_query_through_the_service_registry(
            self, api, registry, blacklist, settings):
        settings.BLACKLIST_URL = ""
        for definition, interfaces in blacklist.service_instances().items():
            registry.put_instance(f"Blacklist|{definition}|5.0.0", interfaces=interfaces)
        blacklist.put("TestProvider1")
        assert pull_ids(api) == [P2, P3, P4]
        assert len(blacklist.calls_to(QUERY)) == 1
        assert {"serviceDefinitionNames": ["blacklistManagement"]} in [
            call.body for call in registry.lookups()]


@reads_no_source
def test_the_fake_blacklist_refuses_a_caller_without_identity() -> None:
    """The fake checks identities, so the tests above show that ours is sent."""
    fake = FakeBlacklist()
    try:
        request = urllib.request.Request(fake.url + QUERY, data=json.dumps({}).encode(),
                                         method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request)
        assert refused.value.code == 401
    finally:
        fake.stop()
