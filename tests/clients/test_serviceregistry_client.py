"""The ServiceRegistry client against the fake over real HTTP: identity, errors (503)."""
import pytest

from conventions.exceptions import ExternalServerError
from identity.outsourced import reset_login
from clients import exchange
from clients import serviceregistry as client
from tests.fake_authentication import FakeAuthentication
from tests.fake_service_registry import FakeServiceRegistry
from tests.ports import reserved_port

NAME = "SimpleStoreServiceOrchestration"


@pytest.fixture
def registry(settings):
    fake = FakeServiceRegistry()
    settings.SERVICE_REGISTRY_URL = fake.url
    exchange.opener.cache_clear()
    yield fake
    fake.stop()


class ServiceRegistryClientTests:
    def test_it_sends_the_declared_identity(self, registry, settings):
        settings.AUTHENTICATION_POLICY = "declared"
        assert client.system_revoke() is False
        assert registry.calls[0].authorization == f"Bearer SYSTEM//{NAME}"

    def test_it_sends_its_identity_token_under_the_outsourced_policy(self, registry, settings):
        authentication = FakeAuthentication({NAME: "secret"})
        settings.AUTHENTICATION_POLICY = "outsourced"
        settings.AUTHENTICATION_SERVICE_URL = authentication.url
        settings.AUTHENTICATION_PASSWORD = "secret"
        reset_login()
        registry.identify = lambda header: NAME if header == (
            f"Bearer IDENTITY-TOKEN//{authentication.session_token(NAME)}") else None
        try:
            client.system_revoke()
            authentication.close_sessions()  # refused once: a new login, the call again
            client.system_revoke()
            assert authentication.logins == 2
            assert [call.authorization.startswith("Bearer IDENTITY-TOKEN//")
                    for call in registry.calls] == [True, True, True]
        finally:
            reset_login()
            authentication.stop()

    def test_it_reports_an_error_answer_as_external_server_error(self, registry):
        with pytest.raises(ExternalServerError) as raised:
            client.service_register({"serviceDefinitionName": "x", "version": "1.0.0",
                                     "metadata": {}, "interfaces": []})
        assert raised.value.status_code == 503
        assert raised.value.message == ("ServiceRegistry POST /serviceregistry/service-discovery"
                                        f"/register answered HTTP 400: System does not exist: "
                                        f"{NAME}")

    def test_it_reports_an_unreachable_service_registry(self, settings):
        settings.SERVICE_REGISTRY_URL = f"http://127.0.0.1:{reserved_port()}"
        exchange.opener.cache_clear()
        with pytest.raises(client.ServiceRegistryUnreachable) as raised:
            client.system_revoke()
        assert raised.value.message == ("ServiceRegistry DELETE /serviceregistry/"
                                        "system-discovery/revoke failed: Connection refused")


class ServiceLookupByDefinitionTests:
    def test_it_looks_up_identity_without_an_authorization_header(self, registry, settings):
        settings.AUTHENTICATION_POLICY = "outsourced"
        # Registered as the Java Authentication registers it: found by anyone.
        registry.put_instance("Authentication|identity|5.0.0", interfaces=[],
                              metadata={"unrestrictedDiscovery": True})
        registry.put_instance("Other|temperature|1.0.0", interfaces=[])
        entries = client.service_lookup_by_definition(["identity"], authenticated=False)
        assert [entry["instanceId"] for entry in entries] == ["Authentication|identity|5.0.0"]
        assert registry.calls[0].authorization is None

    def test_it_reports_a_refusal_as_external_server_error(self, registry):
        with pytest.raises(client.ServiceRegistryUnavailable) as raised:
            client.service_lookup_by_definition(["temperature"], authenticated=False)
        assert raised.value.status_code == 503
        assert ("answered HTTP 401: No authorization header has been provided"
                in raised.value.message)
