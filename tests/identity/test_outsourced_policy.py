"""AUTHENTICATION_POLICY=outsourced against a fake Authentication system over real HTTP."""
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.core.cache import cache

from identity import outsourced
from tests.factories import grant
from tests.fake_authentication import FakeAuthentication
from tests.helpers import assert_error, assert_forbidden, assert_unauthenticated, with_token
from tests.orchestration.helpers import PULL
from tests.probe_urls import PROBE

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.probe_urls")]

WHOAMI = f"{PROBE}/whoami"
MGMT_WITHOUT_PERMISSION = f"{PROBE}/mgmt/without-permission"
MGMT_WITH_PERMISSION = f"{PROBE}/mgmt/with-permission"
OUR_NAME = "ServiceOrchestration"
OUR_PASSWORD = "orchestrator-secret"
UNAVAILABLE = "Authentication system is not available: "


@pytest.fixture(autouse=True)
def clean_client_state() -> Iterator[None]:
    """Verification answers and our login outlive a request by design; not a test."""
    cache.clear()
    outsourced.reset_login()
    yield
    cache.clear()
    outsourced.reset_login()


@pytest.fixture
def fake() -> Iterator[FakeAuthentication]:
    server = FakeAuthentication({OUR_NAME: OUR_PASSWORD})
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def outsourced_policy(settings, fake: FakeAuthentication) -> None:
    settings.AUTHENTICATION_POLICY = "outsourced"
    settings.AUTHENTICATION_SERVICE_URL = fake.url
    settings.AUTHENTICATION_PASSWORD = OUR_PASSWORD
    settings.SYSTEM_NAME = OUR_NAME
    settings.AUTHENTICATION_CACHE_SECONDS = 30
    settings.AUTHENTICATION_TIMEOUT_SECONDS = 2.0


def whoami(api, token: str):
    return api.get(WHOAMI, **with_token(token))


def pull(api, token: str):
    return api.post(PULL, {}, format="json", **with_token(token))


def assert_unavailable(response, reason: str) -> None:
    assert_error(response, 503, "EXTERNAL_SERVER_ERROR", UNAVAILABLE + reason, f"POST {PULL}")


class OutsourcedIdentityTests:
    def test_it_identifies_the_system_by_its_normalized_name(self, api, fake):
        fake.add_identity("t-1", "temperature-consumer")
        response = whoami(api, "t-1")
        assert response.status_code == 200
        assert response.json() == {"name": "TemperatureConsumer", "operator": False}

    def test_it_takes_the_operator_flag_from_the_answer(self, api, fake):
        fake.add_identity("t-admin", "Admin", sysop=True)
        assert whoami(api, "t-admin").json() == {"name": "Admin", "operator": True}

    def test_it_lets_an_operator_token_manage_under_sysop_only(self, api, fake, settings):
        settings.MANAGEMENT_POLICY = "sysop-only"
        fake.add_identity("t-admin", "Admin", sysop=True)
        fake.add_identity("t-other", "Other")
        assert api.get(MGMT_WITHOUT_PERMISSION, **with_token("t-admin")).status_code == 200
        response = api.get(MGMT_WITHOUT_PERMISSION, **with_token("t-other"))
        assert_forbidden(response, f"GET {MGMT_WITHOUT_PERMISSION}")

    def test_it_applies_django_permissions_to_the_verified_system(self, api, fake, settings):
        settings.MANAGEMENT_POLICY = "permission"
        grant("Manager", "view_identitytoken")
        fake.add_identity("t-manager", "manager")
        assert api.get(MGMT_WITH_PERMISSION, **with_token("t-manager")).status_code == 200

    def test_it_lets_a_verified_system_pull(self, api, fake):
        fake.add_identity("t-1", "CarConsumer1")
        assert pull(api, "t-1").status_code == 200

    def test_it_refuses_a_token_the_authentication_system_does_not_verify(self, api, fake):
        assert_unauthenticated(whoami(api, "unknown"), f"GET {WHOAMI}")
        assert_unauthenticated(pull(api, "unknown"), f"POST {PULL}")
        assert fake.verifications == 1  # the negative answer is cached too

    def test_it_refuses_a_verified_token_whose_session_has_expired(self, api, fake):
        # The reference verifies such tokens until its cleaner runs (quirk Q8).
        fake.add_identity("t-old", "Consumer", expires_in=-1)
        assert_unauthenticated(whoami(api, "t-old"), f"GET {WHOAMI}")

    def test_it_refuses_a_missing_header(self, api, fake):
        assert_unauthenticated(api.get(WHOAMI), f"GET {WHOAMI}",
                               "No authorization header has been provided")
        assert fake.logins == fake.verifications == 0

    @pytest.mark.parametrize("header", [
        "Bearer SYSTEM//x", "Bearer IDENTITY-TOKEN//", "Bearer IDENTITY-TOKEN//a//b",
        "Basic IDENTITY-TOKEN//t-1", "Bearer t-1",
    ])
    def test_it_refuses_an_invalid_header(self, api, fake, header):
        fake.add_identity("t-1", "Consumer")
        assert_unauthenticated(api.get(WHOAMI, HTTP_AUTHORIZATION=header), f"GET {WHOAMI}")
        assert fake.verifications == 0


class AuthenticationUnavailableTests:
    def test_it_answers_503_on_pull_and_401_elsewhere_when_the_system_is_down(self, api, fake):
        fake.add_identity("t-1", "Consumer")
        fake.stop()
        assert_unavailable(pull(api, "t-1"), "identity-login failed: Connection refused")
        assert_unauthenticated(whoami(api, "t-1"), f"GET {WHOAMI}")

    def test_it_answers_503_on_pull_and_401_elsewhere_when_the_system_fails(self, api, fake):
        fake.add_identity("t-1", "Consumer")
        fake.fail_with = 500
        assert_unavailable(pull(api, "t-1"), "identity-login answered HTTP 500")
        assert_unauthenticated(whoami(api, "t-1"), f"GET {WHOAMI}")

    def test_it_answers_503_when_verify_fails_after_login(self, api, fake):
        fake.add_identity("t-1", "Consumer")
        assert whoami(api, "t-1").status_code == 200
        fake.fail_with = 503
        assert_unavailable(pull(api, "t-2"), "identity-verify answered HTTP 503")
        assert_unauthenticated(whoami(api, "t-2"), f"GET {WHOAMI}")

    def test_it_answers_503_on_pull_and_401_elsewhere_when_our_login_is_refused(
            self, api, fake, settings):
        settings.AUTHENTICATION_PASSWORD = "wrong"
        fake.add_identity("t-1", "Consumer")
        assert_unavailable(pull(api, "t-1"),
                           f"identity-login refused our credentials (system {OUR_NAME})")
        assert_unauthenticated(whoami(api, "t-1"), f"GET {WHOAMI}")

    def test_it_answers_503_when_the_answer_is_not_json(self, api, settings, http_sink):
        settings.AUTHENTICATION_SERVICE_URL = f"http://127.0.0.1:{http_sink.port}"
        http_sink.status = 200  # with an empty body
        assert_unavailable(pull(api, "t-1"), "identity-login answered malformed JSON")

    def test_it_answers_503_when_the_system_is_too_slow(self, api, settings, http_sink):
        settings.AUTHENTICATION_SERVICE_URL = f"http://127.0.0.1:{http_sink.port}"
        settings.AUTHENTICATION_TIMEOUT_SECONDS = 0.2
        http_sink.delay = 1
        assert_unavailable(pull(api, "t-1"), "identity-login timed out after 0.2 s")

    def test_it_does_not_cache_unavailability(self, api, fake):
        fake.add_identity("t-1", "Consumer")
        fake.fail_with = 500
        assert pull(api, "t-1").status_code == 503
        fake.fail_with = None
        assert pull(api, "t-1").status_code == 200

    def test_it_logs_the_unavailability(self, api, fake, caplog):
        fake.stop()
        with caplog.at_level("WARNING", logger="serviceorchestration.auth"):
            whoami(api, "t-1")
        assert f"{UNAVAILABLE}identity-login failed" in caplog.text
        assert "t-1" not in caplog.text


class AuthenticationSessionTests:
    def test_it_logs_in_once_for_many_verifications(self, api, fake, settings):
        settings.AUTHENTICATION_CACHE_SECONDS = 0
        fake.add_identity("t-1", "Consumer")
        for _ in range(5):
            assert whoami(api, "t-1").status_code == 200
        assert (fake.logins, fake.verifications) == (1, 5)

    def test_it_logs_in_once_for_concurrent_verifications(self, fake, settings):
        settings.AUTHENTICATION_CACHE_SECONDS = 0
        for number in range(8):
            fake.add_identity(f"t-{number}", f"Consumer{number}")
        with ThreadPoolExecutor(max_workers=8) as pool:
            identities = list(pool.map(outsourced.identity_token_verify_remote,
                                       [f"t-{number}" for number in range(8)]))
        assert [identity.name for identity in identities] == [f"Consumer{n}" for n in range(8)]
        assert fake.logins == 1

    def test_it_ignores_proxy_settings(self, api, fake, monkeypatch):
        for variable in ("http_proxy", "HTTP_PROXY"):
            monkeypatch.setenv(variable, "http://127.0.0.1:9")
        for variable in ("no_proxy", "NO_PROXY"):
            monkeypatch.delenv(variable, raising=False)
        fake.add_identity("t-1", "Consumer")
        assert whoami(api, "t-1").status_code == 200

    def test_it_sends_its_own_token_on_verify(self, api, fake):
        fake.add_identity("t-1", "Consumer")
        whoami(api, "t-1")
        assert fake.verify_headers == [f"Bearer IDENTITY-TOKEN//{fake.session_token(OUR_NAME)}"]

    def test_it_logs_in_again_when_its_token_is_about_to_expire(self, api, fake, settings):
        settings.AUTHENTICATION_CACHE_SECONDS = 0
        fake.token_seconds = 30  # inside the renewal margin from the start
        fake.add_identity("t-1", "Consumer")
        for _ in range(3):
            assert whoami(api, "t-1").status_code == 200
        assert fake.logins == 3

    def test_it_logs_in_again_once_when_verify_refuses_its_token(self, api, fake, settings):
        settings.AUTHENTICATION_CACHE_SECONDS = 0
        fake.add_identity("t-1", "Consumer")
        assert whoami(api, "t-1").status_code == 200
        first = fake.session_token(OUR_NAME)
        fake.close_sessions()  # e.g. the Authentication system restarted
        assert whoami(api, "t-1").status_code == 200
        renewed = f"Bearer IDENTITY-TOKEN//{fake.session_token(OUR_NAME)}"
        assert fake.verify_headers == [f"Bearer IDENTITY-TOKEN//{first}"] * 2 + [renewed]
        assert fake.logins == 2

    def test_it_gives_up_when_verify_refuses_its_fresh_token_too(self, api, fake, monkeypatch):
        fake.add_identity("t-1", "Consumer")
        monkeypatch.setattr(fake, "_caller", lambda authorization: None)
        assert_unavailable(pull(api, "t-1"), "identity-verify refused our identity token")
        assert (fake.logins, fake.verifications) == (2, 2)


class VerificationCacheTests:
    def test_it_answers_a_repeated_token_from_the_cache(self, api, fake):
        fake.add_identity("t-1", "Consumer", sysop=True)
        assert whoami(api, "t-1").json() == {"name": "Consumer", "operator": True}
        assert whoami(api, "t-1").json() == {"name": "Consumer", "operator": True}
        assert fake.verifications == 1

    def test_it_keys_the_cache_by_a_hash_of_the_token(self, api, fake):
        fake.add_identity("secret-token", "Consumer")
        whoami(api, "secret-token")
        keys = list(cache._cache)  # the local-memory backend of the tests
        assert keys and not any("secret-token" in key for key in keys)

    def test_it_forgets_answers_after_the_cache_time(self, api, fake, settings):
        settings.AUTHENTICATION_CACHE_SECONDS = 1
        fake.add_identity("t-1", "Consumer")
        whoami(api, "t-1")
        whoami(api, "t-1")
        assert fake.verifications == 1
        time.sleep(1.1)
        whoami(api, "t-1")
        assert fake.verifications == 2

    def test_it_does_not_cache_when_the_cache_time_is_zero(self, api, fake, settings):
        settings.AUTHENTICATION_CACHE_SECONDS = 0
        fake.add_identity("t-1", "Consumer")
        whoami(api, "t-1")
        whoami(api, "t-1")
        assert fake.verifications == 2

    def test_it_never_caches_beyond_the_token_expiry(self, api, fake):
        fake.add_identity("t-1", "Consumer", expires_in=3)
        assert whoami(api, "t-1").status_code == 200
        assert whoami(api, "t-1").status_code == 200
        assert fake.verifications == 1
        time.sleep(3.1)
        assert_unauthenticated(whoami(api, "t-1"), f"GET {WHOAMI}")
        assert fake.verifications == 2
