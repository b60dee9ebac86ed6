"""The client of other Arrowhead systems' operations (clients/peers.py), over real HTTP
against the fake ConsumerAuthorization and the fake ServiceRegistry."""
import pytest

from clients import errors, peers
from tests.fake_consumer_authorization import TOKEN_VERIFY, VERIFY, FakeConsumerAuthorization

SERVICE = peers.PeerService(
    system="ConsumerAuthorization", definition="authorization",
    url_setting="CONSUMER_AUTHORIZATION_URL", base_path="/consumerauthorization/authorization",
    operations={"verify": peers.PeerOperation("POST", "/verify")})
TOKENS = peers.PeerService(
    system="ConsumerAuthorization", definition="authorizationToken",
    url_setting="CONSUMER_AUTHORIZATION_URL",
    base_path="/consumerauthorization/authorization-token",
    operations={"verify": peers.PeerOperation("GET", "/token/verify/{token}")})
ASK = {"provider": "SimpleStoreServiceOrchestration", "consumer": "Manager", "cloud": "LOCAL",
       "targetType": "SERVICE_DEF", "target": "x", "scope": None}


@pytest.fixture
def ca(settings):
    fake = FakeConsumerAuthorization()
    settings.CONSUMER_AUTHORIZATION_URL = fake.url
    peers.forget_locations()
    yield fake
    fake.stop()
    peers.forget_locations()


class ExplicitUrlTests:
    def test_it_calls_the_operation_with_our_identity(self, ca):
        ca.grant("Manager", "SimpleStoreServiceOrchestration", "x")
        assert peers.call(SERVICE, "verify", body=ASK) is True
        [call] = ca.calls
        assert (call.method, call.path, call.body) == ("POST", VERIFY, ASK)
        assert call.authorization == "Bearer SYSTEM//SimpleStoreServiceOrchestration"

    def test_it_fills_path_parameters_quoted(self, ca):
        assert peers.call(TOKENS, "verify", path_params=("a/b c",)) == {"verified": False}
        assert ca.calls[0].path == f"{TOKEN_VERIFY}a%2Fb%20c"

    def test_it_appends_path_parameters_the_path_has_no_place_for(self, ca):
        # As the Java systems' callers do: the Java Blacklist registers `check` as `/check`.
        service = peers.PeerService("ConsumerAuthorization", "authorizationToken",
                                    "CONSUMER_AUTHORIZATION_URL",
                                    "/consumerauthorization/authorization-token",
                                    {"verify": peers.PeerOperation("GET", "/token/verify")})
        assert peers.call(service, "verify", path_params=("a/b c",)) == {"verified": False}
        assert ca.calls[0].path == f"{TOKEN_VERIFY}a%2Fb%20c"

    def test_it_adds_the_query(self, ca):
        service = peers.PeerService("ConsumerAuthorization", "authorizationTokenManagement",
                                    "CONSUMER_AUTHORIZATION_URL",
                                    "/consumerauthorization/authorization/mgmt/token",
                                    {"generate-tokens": peers.PeerOperation("POST", "/generate")})
        answer = peers.call(service, "generate-tokens", body={"list": []},
                            query=[("unbound", "true")])
        assert answer == {"entries": [], "count": 0}
        assert ca.calls[0].path.endswith("/generate?unbound=true")

    def test_a_4xx_answer_is_the_peers_own_error(self, ca):
        with pytest.raises(errors.PeerRefused) as refused:
            peers.call(SERVICE, "verify", body={**ASK, "provider": "Other", "consumer": "X"})
        assert (refused.value.status_code, refused.value.exception_type,
                refused.value.message) == (403, "FORBIDDEN", "Only the related provider or "
                                           "consumer can use this operation")

    @pytest.mark.parametrize("status", [500, 503])
    def test_a_5xx_answer_is_unavailable(self, ca, status):
        ca.fail_with = status
        with pytest.raises(peers.PeerUnavailable) as unavailable:
            peers.call(SERVICE, "verify", body=ASK)
        assert unavailable.value.status_code == 503
        assert unavailable.value.message == (
            f"ConsumerAuthorization authorization/verify answered HTTP {status}: Broken")

    def test_a_stopped_peer_is_unavailable(self, ca):
        ca.stop()
        with pytest.raises(peers.PeerUnavailable, match="authorization/verify failed: "
                                                        "Connection refused"):
            peers.call(SERVICE, "verify", body=ASK)

    def test_an_operation_the_peer_does_not_offer_is_unavailable(self, ca):
        with pytest.raises(peers.PeerUnavailable, match="does not offer authorization/lookup"):
            peers.call(SERVICE, "lookup", body={})
        assert ca.calls == []


class DiscoveryTests:
    def test_without_url_or_service_registry_it_is_unavailable(self, settings):
        settings.CONSUMER_AUTHORIZATION_URL = settings.SERVICE_REGISTRY_URL = ""
        with pytest.raises(peers.PeerUnavailable) as unavailable:
            peers.call(SERVICE, "verify", body=ASK)
        assert unavailable.value.message == (
            "ConsumerAuthorization is not configured: neither CONSUMER_AUTHORIZATION_URL nor "
            "SERVICE_REGISTRY_URL is set")

    def test_it_uses_the_registered_base_path_and_operation(self, ca, settings, registry):
        settings.CONSUMER_AUTHORIZATION_URL = ""
        registry.put_instance("ConsumerAuthorization|authorizationToken|1.0.0",
                              interfaces=ca.service_instances()["authorizationToken"])
        assert peers.call(TOKENS, "verify", path_params=("t",)) == {"verified": False}
        assert ca.calls[0].path == f"{TOKEN_VERIFY}t"

    def test_a_found_location_is_kept(self, ca, settings, registry):
        settings.CONSUMER_AUTHORIZATION_URL = ""
        registry.put_instance("ConsumerAuthorization|authorization|1.0.0",
                              interfaces=ca.service_instances()["authorization"])
        for _ in range(3):
            peers.call(SERVICE, "verify", body=ASK)
        assert len(registry.lookups()) == 1 and len(ca.calls) == 3

    def test_it_looks_up_again_after_the_cache_time(self, ca, settings, registry):
        settings.CONSUMER_AUTHORIZATION_URL = ""
        settings.SERVICE_REGISTRY_CACHE_SECONDS = 0
        registry.put_instance("ConsumerAuthorization|authorization|1.0.0",
                              interfaces=ca.service_instances()["authorization"])
        for _ in range(2):
            peers.call(SERVICE, "verify", body=ASK)
        assert len(registry.lookups()) == 2

    def test_no_http_interface_is_unavailable(self, ca, settings, registry):
        settings.CONSUMER_AUTHORIZATION_URL = ""
        [interface] = ca.service_instances()["authorization"]
        registry.put_instance("ConsumerAuthorization|authorization|1.0.0",
                              interfaces=[{**interface, "templateName": "generic_mqtt"}])
        with pytest.raises(peers.PeerUnavailable, match="knows no authorization service of "
                                                        "ConsumerAuthorization"):
            peers.call(SERVICE, "verify", body=ASK)

    def test_a_failing_lookup_is_unavailable(self, ca, settings, registry):
        settings.CONSUMER_AUTHORIZATION_URL = ""
        registry.fail_with = 500
        with pytest.raises(peers.PeerUnavailable, match="ConsumerAuthorization could not be "
                                                        "looked up: ServiceRegistry"):
            peers.call(SERVICE, "verify", body=ASK)
