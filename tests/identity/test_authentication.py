import datetime as dt

import pytest
from django.utils import timezone

from identity.models import IdentityToken
from identity.services import identity_token_issue
from tests.helpers import as_system, assert_error, assert_unauthenticated, with_token
from tests.probe_urls import PROBE

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.probe_urls")]

WHOAMI = f"{PROBE}/whoami"
ORIGIN = f"GET {WHOAMI}"


def get_whoami(api, header: str | None):
    extra = {} if header is None else {"HTTP_AUTHORIZATION": header}
    return api.get(WHOAMI, **extra)


class DeclaredPolicyTests:
    def test_it_identifies_the_declared_system_by_its_normalized_name(self, api):
        response = get_whoami(api, "Bearer SYSTEM//temperature-consumer")
        assert response.status_code == 200
        assert response.json() == {"name": "TemperatureConsumer", "operator": False}

    def test_it_treats_sysop_as_the_operator(self, api):
        assert get_whoami(api, "Bearer SYSTEM//Sysop").json()["operator"] is True
        assert get_whoami(api, "Bearer SYSTEM//sysop").json() == {"name": "Sysop",
                                                                   "operator": True}

    def test_it_does_not_treat_upper_case_sysop_as_the_operator(self, api):
        assert get_whoami(api, "Bearer SYSTEM//SYSOP").json() == {"name": "SYSOP",
                                                                   "operator": False}

    def test_it_accepts_a_trailing_separator_like_the_reference(self, api):
        assert get_whoami(api, "Bearer SYSTEM//Consumer//").json()["name"] == "Consumer"

    @pytest.mark.parametrize("header", [None, "", "   "])
    def test_it_refuses_a_missing_header(self, api, header):
        assert_unauthenticated(get_whoami(api, header), ORIGIN,
                               "No authorization header has been provided")

    @pytest.mark.parametrize("header", [
        "Bearer systemName",                    # no prefix
        "Bearer prefix//systemName",            # unknown prefix
        "Bearer prefix//systemName//other",     # three parts
        "Bearer SYSTEM//a//b",                  # three parts
        "Basic SYSTEM//Consumer",               # wrong scheme
        "bearer SYSTEM//Consumer",              # scheme is case-sensitive
        "Bearer  SYSTEM//Consumer",             # two spaces
        "Bearer SYSTEM//",                      # no name
        "Bearer SYSTEM//   ",                   # blank name
        "Bearer IDENTITY-TOKEN//abc",           # token prefix under the declared policy
        "Bearer",
    ])
    def test_it_refuses_an_invalid_header(self, api, header):
        assert_unauthenticated(get_whoami(api, header), ORIGIN)

    def test_it_refuses_a_declared_name_that_breaks_the_naming_convention(self, api):
        response = get_whoami(api, "Bearer SYSTEM//inv@lid")
        assert_error(response, 400, "INVALID_PARAMETER",
                     "The specified system name does not match the naming convention: Inv@lid",
                     ORIGIN)

    def test_it_only_trims_names_in_simple_normalization_mode(self, api, settings):
        settings.NORMALIZATION_MODE = "simple"
        assert get_whoami(api, "Bearer SYSTEM//Consumer1").json()["name"] == "Consumer1"
        response = get_whoami(api, "Bearer SYSTEM//temperature-consumer")
        assert response.status_code == 400
        assert response.json()["errorMessage"].endswith(": temperature-consumer")


class TokenPolicyTests:
    @pytest.fixture(autouse=True)
    def token_policy(self, settings):
        settings.AUTHENTICATION_POLICY = "token"

    def issue(self, name: str = "TemperatureConsumer", *, operator: bool = False,
              ttl: int = 3600) -> str:
        raw, _ = identity_token_issue(system_name=name, operator=operator, ttl_seconds=ttl)
        return raw

    def test_it_identifies_the_system_the_token_was_issued_to(self, api):
        response = api.get(WHOAMI, **with_token(self.issue()))
        assert response.status_code == 200
        assert response.json() == {"name": "TemperatureConsumer", "operator": False}

    def test_it_marks_operator_identities(self, api):
        response = api.get(WHOAMI, **with_token(self.issue("Admin", operator=True)))
        assert response.json() == {"name": "Admin", "operator": True}

    def test_it_stores_only_a_hash_of_the_token(self):
        raw = self.issue()
        stored = IdentityToken.objects.get()
        assert raw not in (stored.token_hash, stored.hint)
        assert len(stored.token_hash) == 64 and raw.startswith(stored.hint)

    def test_it_refuses_an_unknown_token(self, api):
        self.issue()
        assert_unauthenticated(api.get(WHOAMI, **with_token("not-a-token")), ORIGIN)

    def test_it_refuses_an_expired_token(self, api):
        raw = self.issue()
        IdentityToken.objects.update(expires_at=timezone.now() - dt.timedelta(seconds=1))
        assert_unauthenticated(api.get(WHOAMI, **with_token(raw)), ORIGIN)

    def test_it_refuses_a_revoked_token(self, api):
        raw = self.issue()
        IdentityToken.objects.update(revoked_at=timezone.now())
        assert_unauthenticated(api.get(WHOAMI, **with_token(raw)), ORIGIN)

    def test_it_refuses_a_token_of_a_deactivated_identity(self, api):
        raw = self.issue()
        IdentityToken.objects.get().user.__class__.objects.update(is_active=False)
        assert_unauthenticated(api.get(WHOAMI, **with_token(raw)), ORIGIN)

    def test_it_refuses_a_declared_identity(self, api):
        self.issue("Consumer")
        assert_unauthenticated(api.get(WHOAMI, **as_system("Consumer")), ORIGIN)

    def test_it_refuses_a_missing_header(self, api):
        assert_unauthenticated(api.get(WHOAMI), ORIGIN,
                               "No authorization header has been provided")

    def test_it_keeps_earlier_tokens_of_a_system_valid(self, api):
        first, second = self.issue(), self.issue()
        assert api.get(WHOAMI, **with_token(first)).status_code == 200
        assert api.get(WHOAMI, **with_token(second)).status_code == 200


class ExemptEndpointTests:
    def test_it_serves_echo_without_identity(self, api):
        response = api.get("/serviceorchestration/monitor/echo")
        assert response.status_code == 200
        assert response.content == b"Got it!"
        assert response["Content-Type"].startswith("text/plain")

    def test_it_ignores_an_invalid_header_on_echo(self, api):
        response = api.get("/serviceorchestration/monitor/echo",
                           HTTP_AUTHORIZATION="Basic nonsense")
        assert response.status_code == 200
