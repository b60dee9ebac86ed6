"""AUTHENTICATION_POLICY=outsourced without AUTHENTICATION_SERVICE_URL: the Authentication
system is found through the ServiceRegistry (reference-dynamic §13.2), both fakes over real
HTTP."""
import os
import subprocess
import sys
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from django.core.cache import cache

from identity import outsourced
from clients import authentication as authentication_client
from clients import exchange
from tests.fake_authentication import FakeAuthentication
from tests.fake_service_registry import FakeServiceRegistry
from tests.helpers import assert_error, assert_unauthenticated, with_token
from tests.orchestration.helpers import PULL
from tests.ports import reserved_port
from tests.probe_urls import PROBE
from tests.worker import ROOT

WHOAMI = f"{PROBE}/whoami"
OUR_NAME = "ServiceOrchestration"
OUR_PASSWORD = "orchestrator-secret"
IDENTITY_ID = "Authentication|identity|5.0.0"
UNAVAILABLE = "Authentication system is not available: "


@pytest.fixture(autouse=True)
def clean_client_state() -> Iterator[None]:
    cache.clear()
    outsourced.reset_login()
    yield
    cache.clear()
    outsourced.reset_login()


@pytest.fixture
def authentication() -> Iterator[FakeAuthentication]:
    server = FakeAuthentication({OUR_NAME: OUR_PASSWORD})
    yield server
    server.stop()


@pytest.fixture
def registry(settings) -> Iterator[FakeServiceRegistry]:
    fake = FakeServiceRegistry()
    settings.SERVICE_REGISTRY_URL = fake.url
    exchange.opener.cache_clear()
    yield fake
    fake.stop()


@pytest.fixture(autouse=True)
def outsourced_policy(settings) -> None:
    settings.AUTHENTICATION_POLICY = "outsourced"
    settings.AUTHENTICATION_SERVICE_URL = ""
    settings.AUTHENTICATION_PASSWORD = OUR_PASSWORD
    settings.SYSTEM_NAME = OUR_NAME
    settings.AUTHENTICATION_CACHE_SECONDS = 30
    settings.AUTHENTICATION_TIMEOUT_SECONDS = 2.0


def identity_interface(url: str, template: str = "generic_http") -> dict:
    parts = urlsplit(url)
    return {"templateName": template, "protocol": template.removeprefix("generic_"),
            "policy": "NONE",
            "properties": {"accessAddresses": [parts.hostname], "accessPort": parts.port,
                           "basePath": "/authentication/identity",
                           "operations": {"identity-login": {"path": "/login", "method": "POST"},
                                          "identity-verify": {"path": "/verify",
                                                              "method": "GET"}}}}


def register_identity(registry: FakeServiceRegistry, url: str) -> None:
    mqtt = {"templateName": "generic_mqtt", "protocol": "tcp", "policy": "NONE",
            "properties": {"accessAddresses": ["127.0.0.1"], "accessPort": 1883,
                           "baseTopic": "arrowhead/identity/", "operations": ["identity-login"]}}
    # As the Java Authentication registers it: found by anyone (restricted discovery).
    registry.put_instance(IDENTITY_ID, interfaces=[mqtt, identity_interface(url)],
                          metadata={"unrestrictedDiscovery": True})


def whoami(api, token: str):
    return api.get(WHOAMI, **with_token(token))


@pytest.mark.django_db
@pytest.mark.urls("tests.probe_urls")
class AuthenticationDiscoveryTests:
    def test_it_finds_the_authentication_system_through_the_service_registry(
            self, api, registry, authentication):
        register_identity(registry, authentication.url)
        authentication.add_identity("t-1", "TemperatureConsumer")
        response = whoami(api, "t-1")
        assert response.status_code == 200
        assert response.json() == {"name": "TemperatureConsumer", "operator": False}
        assert authentication.logins == 1
        [lookup] = registry.lookups()
        assert lookup.body == {"serviceDefinitionNames": ["identity"]}
        assert lookup.authorization is None  # no token before login: chicken and egg

    def test_it_keeps_the_found_location_for_later_requests(self, api, registry,
                                                             authentication):
        register_identity(registry, authentication.url)
        authentication.add_identity("t-1", "One")
        authentication.add_identity("t-2", "Two")
        assert whoami(api, "t-1").status_code == whoami(api, "t-2").status_code == 200
        assert len(registry.lookups()) == 1

    def test_it_finds_a_moved_authentication_system_again(self, api, registry, authentication):
        register_identity(registry, authentication.url)
        authentication.add_identity("t-1", "One")
        assert whoami(api, "t-1").status_code == 200
        authentication.stop()
        moved = FakeAuthentication({OUR_NAME: OUR_PASSWORD})
        try:
            register_identity(registry, moved.url)
            moved.add_identity("t-2", "Two")
            assert whoami(api, "t-2").status_code == 401  # the old address refused
            assert whoami(api, "t-2").json() == {"name": "Two", "operator": False}
            assert len(registry.lookups()) == 2 and moved.logins == 1
        finally:
            moved.stop()

    def test_it_answers_503_to_pull_without_an_identity_service(self, api, registry):
        response = api.post(PULL, {}, format="json", **with_token("t-1"))
        assert_error(response, 503, "EXTERNAL_SERVER_ERROR",
                     UNAVAILABLE + "the ServiceRegistry knows no identity service with an "
                                   "HTTP interface", f"POST {PULL}")
        response = whoami(api, "t-1")
        assert_unauthenticated(response, f"GET {WHOAMI}")

    def test_it_answers_503_to_pull_when_the_service_registry_is_down(self, api, settings):
        settings.SERVICE_REGISTRY_URL = f"http://127.0.0.1:{reserved_port()}"
        exchange.opener.cache_clear()
        response = api.post(PULL, {}, format="json", **with_token("t-1"))
        assert_error(response, 503, "EXTERNAL_SERVER_ERROR",
                     UNAVAILABLE + "identity lookup failed: ServiceRegistry POST /serviceregistry"
                                   "/service-discovery/lookup?verbose=false failed: Connection "
                                   "refused", f"POST {PULL}")

    def test_it_asks_no_service_registry_when_the_url_is_set(self, api, registry,
                                                              authentication, settings):
        settings.AUTHENTICATION_SERVICE_URL = authentication.url
        authentication.add_identity("t-1", "One")
        assert whoami(api, "t-1").status_code == 200
        assert registry.calls == []


class IdentityInterfaceTests:
    def test_it_builds_the_operation_urls_from_base_path_and_operations(self):
        interface = identity_interface("http://10.0.0.5:8443", "generic_https")
        interface["properties"]["basePath"] = "/auth/"
        interface["properties"]["operations"]["identity-verify"]["path"] = "/check"
        location = authentication_client._http_location(interface)
        assert location.origin == "https://10.0.0.5:8443"
        assert location.paths == {"identity-login": "/auth/login",
                                  "identity-verify": "/auth/check"}

    def test_it_falls_back_to_the_reference_layout_without_operations(self):
        interface = identity_interface("http://authentication.local:8443")
        del interface["properties"]["operations"]
        location = authentication_client._http_location(interface)
        assert location.paths == {"identity-login": "/authentication/identity/login",
                                  "identity-verify": "/authentication/identity/verify"}

    @pytest.mark.parametrize("properties", [
        {"accessAddresses": [], "accessPort": 8443},
        {"accessAddresses": ["127.0.0.1"], "accessPort": "8443"},
        {"accessAddresses": ["127.0.0.1"], "accessPort": 0},
        {"accessAddresses": [7], "accessPort": 8443},
    ])
    def test_it_skips_an_interface_it_cannot_call(self, properties):
        interface = {"templateName": "generic_http", "properties": properties}
        assert authentication_client._http_location(interface) is None


def start(**env: str) -> subprocess.CompletedProcess:
    clean = {key: value for key, value in os.environ.items()
             if not key.startswith(("AUTHENTICATION_", "SERVICE_REGISTRY_URL"))}
    return subprocess.run(
        [sys.executable, "-c", "import config.gunicorn; from django.conf import settings; "
                               "print(settings.AUTHENTICATION_POLICY)"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings",
             "AUTHENTICATION_POLICY": "outsourced", **env})


class OutsourcedSettingsTests:
    @pytest.mark.parametrize("env, message", [
        ({"AUTHENTICATION_PASSWORD": "p"},
         "AUTHENTICATION_POLICY=outsourced needs AUTHENTICATION_SERVICE_URL or "
         "SERVICE_REGISTRY_URL"),
        ({"SERVICE_REGISTRY_URL": "http://127.0.0.1:8443"},
         "AUTHENTICATION_POLICY=outsourced needs AUTHENTICATION_PASSWORD"),
    ])
    def test_it_refuses_to_start_without_what_outsourced_needs(self, env, message):
        result = start(**env)
        assert result.returncode != 0
        assert "ImproperlyConfigured" in result.stderr and message in result.stderr

    @pytest.mark.parametrize("env", [
        {"AUTHENTICATION_PASSWORD": "p", "SERVICE_REGISTRY_URL": "http://127.0.0.1:8443"},
        {"AUTHENTICATION_PASSWORD": "p", "AUTHENTICATION_SERVICE_URL": "http://127.0.0.1:8445"},
    ])
    def test_it_starts_with_either_url(self, env):
        result = start(**env)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "outsourced"
