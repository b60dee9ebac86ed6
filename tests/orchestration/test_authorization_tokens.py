"""Authorization tokens (SPEC §5 item 9): issuing them, and providers verifying them over HTTP."""
import base64
import datetime as dt
import hashlib

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from conventions.timestamps import parse_utc
from orchestration.models import AuthorizationToken
from orchestration.tokens.services import (
    TOKEN_VARIANTS,
    TokenGrant,
    is_issuable,
    token_verify,
    tokens_issue,
    tokens_remove_expired,
)
from tests.concurrency import run_together
from tests.helpers import as_system, assert_error, assert_unauthenticated

pytestmark = pytest.mark.django_db

VERIFY = "/serviceorchestration/authorization-token/verify"
TIME, USAGE, SELF = ("TIME_LIMITED_TOKEN_AUTH", "USAGE_LIMITED_TOKEN_AUTH",
                     "BASE64_SELF_CONTAINED_TOKEN_AUTH")
NOW = dt.datetime(2025, 11, 8, 12, 0, 0, 250000, tzinfo=dt.timezone.utc)


def grant(variant: str = TIME, consumer: str = "ConsumerA", provider: str = "ProviderA",
          target: str = "temperatureInfo", scope: str = "query") -> TokenGrant:
    return TokenGrant(variant, consumer, provider, target, scope)


def issue(*grants: TokenGrant) -> list[str]:
    return [issued.token for issued in tokens_issue(grants or [grant()])]


def verify(api: APIClient, token: str, provider: str = "ProviderA"):
    return api.get(f"{VERIFY}/{token}", **as_system(provider))


def verified(api: APIClient, token: str, provider: str = "ProviderA") -> bool:
    response = verify(api, token, provider)
    assert response.status_code == 200, response.content
    return response.json()["verified"]


def expire(token: str) -> None:
    AuthorizationToken.objects.filter(token_hash=hashlib.sha256(token.encode()).hexdigest()
                                      ).update(expires_at=timezone.now() - dt.timedelta(seconds=1))


def base64url_decode(token: str) -> str:
    return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()


class TokenIssueTests:
    @pytest.mark.parametrize("variant, token_type", [
        (TIME, "TIME_LIMITED_TOKEN"),
        (USAGE, "USAGE_LIMITED_TOKEN"),
        (SELF, "SELF_CONTAINED_TOKEN"),
    ])
    def test_it_issues_each_variant_with_its_type_and_expiry(self, settings, variant,
                                                              token_type):
        settings.TOKEN_TTL_SECONDS = 90
        settings.TOKEN_USAGE_LIMIT = 7
        [issued] = tokens_issue([grant(variant)], now=NOW)
        expires_at = NOW + dt.timedelta(seconds=90)
        limit = 7 if variant == USAGE else None
        assert (issued.grant, issued.token_type, issued.expires_at, issued.usage_limit) == (
            grant(variant), token_type, expires_at, limit)
        record = AuthorizationToken.objects.get()
        assert (record.token_type, record.variant, record.consumer, record.provider,
                record.target, record.scope) == (token_type, variant, "ConsumerA", "ProviderA",
                                                 "temperatureInfo", "query")
        assert (record.expires_at, record.created_at) == (expires_at, NOW)
        assert (record.usage_limit, record.usage_left) == (limit, limit)

    def test_it_issues_only_the_variants_it_has_keys_for(self):
        assert set(TOKEN_VARIANTS) == {TIME, USAGE, SELF}
        assert is_issuable(TIME) and is_issuable(USAGE) and is_issuable(SELF)
        assert not is_issuable("RSA_SHA256_JSON_WEB_TOKEN_AUTH")
        assert not is_issuable("RSA_SHA512_JSON_WEB_TOKEN_AUTH")
        with pytest.raises(ValueError):
            tokens_issue([grant("RSA_SHA256_JSON_WEB_TOKEN_AUTH")])
        assert not AuthorizationToken.objects.exists()

    @pytest.mark.parametrize("variant", [TIME, USAGE, SELF])
    def test_it_stores_only_the_hash_of_the_token(self, variant):
        [token] = issue(grant(variant))
        record = AuthorizationToken.objects.get()
        assert record.token_hash == hashlib.sha256(token.encode()).hexdigest()
        stored = [str(value) for value in AuthorizationToken.objects.values().get().values()]
        assert all(token not in value for value in stored)

    def test_it_issues_one_token_per_grant_in_order(self):
        grants = [grant(TIME, scope="query"), grant(USAGE, scope="query"),
                  grant(TIME, scope="subscribe"), grant(SELF, provider="ProviderB")]
        issued = tokens_issue(grants)
        assert [token.grant for token in issued] == grants
        assert len({token.token for token in issued}) == 4
        assert AuthorizationToken.objects.count() == 4

    def test_it_issues_different_tokens_for_the_same_grant(self):
        for variant in (TIME, USAGE, SELF):
            [first] = issue(grant(variant))
            [second] = issue(grant(variant))
            assert first != second

    def test_it_gives_a_grant_repeated_in_one_call_one_token(self):
        first, second = issue(grant(), grant())
        assert first == second
        assert AuthorizationToken.objects.count() == 1

    def test_it_keeps_the_previous_token_of_the_same_grant_valid(self, api):
        [old] = issue(grant())
        [new] = issue(grant())
        assert old != new
        assert verified(api, old) and verified(api, new)
        assert AuthorizationToken.objects.count() == 2

    @pytest.mark.parametrize("count", [1, 50])
    def test_it_issues_in_a_bounded_number_of_queries(self, django_assert_max_num_queries,
                                                      count):
        grants = [grant((TIME, USAGE, SELF)[i % 3], scope=f"op-{i}") for i in range(count)]
        with django_assert_max_num_queries(1):  # one INSERT
            issued = tokens_issue(grants)
        assert len(issued) == count
        assert AuthorizationToken.objects.count() == count

    def test_it_issues_nothing_for_no_grants(self, django_assert_num_queries):
        with django_assert_num_queries(0):
            assert tokens_issue([]) == []

    def test_it_makes_self_contained_tokens_readable(self, settings):
        settings.TOKEN_TTL_SECONDS = 60
        [first] = tokens_issue([grant(SELF)], now=NOW)
        [second] = tokens_issue([grant(SELF)], now=NOW)
        assert "=" not in first.token
        fields = base64url_decode(first.token).split("|")
        assert fields[:7] == ["LOCAL", "ConsumerA", "ProviderA", "temperatureInfo", "query",
                              "SERVICE_DEF", "2025-11-08T12:01:00.250000Z"]
        assert parse_utc(fields[6]) == first.expires_at
        assert len(fields) == 8 and fields[7]
        assert base64url_decode(second.token).split("|")[7] != fields[7]


class AuthorizationTokenVerifyApiTests:
    @pytest.mark.parametrize("variant, token_type", [
        (TIME, "TIME_LIMITED_TOKEN"), (SELF, "SELF_CONTAINED_TOKEN")])
    def test_it_verifies_a_token_for_its_provider(self, api, variant, token_type):
        [issued] = tokens_issue([grant(variant)])
        response = verify(api, issued.token)
        assert response.status_code == 200
        body = response.json()
        assert body == {
            "verified": True, "consumer": "ConsumerA", "provider": "ProviderA",
            "target": "temperatureInfo", "scope": "query", "expiresAt": body["expiresAt"],
            "tokenType": token_type,
        }
        assert body["expiresAt"].endswith("Z")
        assert parse_utc(body["expiresAt"]) == issued.expires_at
        assert verified(api, issued.token)  # time-limited: as often as wanted until expiry

    def test_it_accepts_the_provider_name_in_any_case_convention(self, api):
        [token] = issue(grant(provider="ProviderA"))
        assert verified(api, token, provider="provider_a")

    def test_it_does_not_verify_a_token_for_another_provider(self, api, settings):
        settings.TOKEN_USAGE_LIMIT = 10
        [token] = issue(grant(USAGE))
        response = verify(api, token, provider="ProviderB")
        assert response.status_code == 200
        assert response.json() == {"verified": False}
        assert AuthorizationToken.objects.get().usage_left == 10  # not spent by the other one

    @pytest.mark.parametrize("token", ["unknown", "a-b_c-d_e", "x" * 300])
    def test_it_does_not_verify_an_unknown_token(self, api, token):
        issue()
        response = verify(api, token)
        assert response.status_code == 200
        assert response.json() == {"verified": False}

    @pytest.mark.parametrize("variant", [TIME, USAGE, SELF])
    def test_it_does_not_verify_an_expired_token(self, api, variant):
        [token] = issue(grant(variant))
        expire(token)
        assert verify(api, token).json() == {"verified": False}

    def test_it_counts_down_a_usage_limited_token(self, api, settings):
        settings.TOKEN_USAGE_LIMIT = 2
        [token] = issue(grant(USAGE))
        first = verify(api, token).json()
        assert (first["verified"], first["tokenType"], first["usageLeft"]) == (
            True, "USAGE_LIMITED_TOKEN", 1)
        assert verify(api, token).json()["usageLeft"] == 0
        assert verify(api, token).json() == {"verified": False}
        assert AuthorizationToken.objects.get().usage_left == 0

    def test_it_needs_an_identity(self, api):
        [token] = issue()
        assert_unauthenticated(api.get(f"{VERIFY}/{token}"), f"GET {VERIFY}/{token}",
                               "No authorization header has been provided")

    def test_it_refuses_other_methods(self, api):
        [token] = issue()
        response = api.post(f"{VERIFY}/{token}", {}, format="json", **as_system("ProviderA"))
        assert_error(response, 405, "INVALID_PARAMETER", 'Method "POST" not allowed.',
                     f"POST {VERIFY}/{token}")


class UsageLimitedTokenConcurrencyTests:
    pytestmark = pytest.mark.django_db(transaction=True)

    def test_it_never_verifies_more_often_than_the_limit(self, settings):
        settings.TOKEN_USAGE_LIMIT = 3
        [token] = issue(grant(USAGE))
        answers = run_together(*[lambda: verify(APIClient(), token).json()["verified"]] * 8)
        assert sorted(answers) == [False] * 5 + [True] * 3
        assert AuthorizationToken.objects.get().usage_left == 0


class TokenVerifyTests:
    def test_it_verifies_only_before_the_expiry(self):
        [issued] = tokens_issue([grant()], now=NOW)
        assert token_verify(raw=issued.token, provider="ProviderA",
                            now=issued.expires_at - dt.timedelta(microseconds=1)).verified
        assert token_verify(raw=issued.token, provider="ProviderA",
                            now=issued.expires_at) == token_verify(raw="x", provider="ProviderA")

    def test_it_returns_the_record_when_verified(self):
        [token] = issue(grant(scope="subscribe"))
        verification = token_verify(raw=token, provider="ProviderA")
        assert verification.verified and verification.token.scope == "subscribe"


class TokenRemoveExpiredTests:
    def test_it_removes_only_expired_tokens(self):
        tokens = issue(grant(TIME), grant(USAGE), grant(SELF), grant(scope="subscribe"))
        expire(tokens[1])
        expire(tokens[2])
        assert tokens_remove_expired() == 2
        assert set(AuthorizationToken.objects.values_list("variant", "scope")) == {
            (TIME, "query"), (TIME, "subscribe")}

    def test_it_treats_the_expiry_instant_as_expired(self):
        [issued] = tokens_issue([grant()], now=NOW)
        assert tokens_remove_expired(now=issued.expires_at - dt.timedelta(microseconds=1)) == 0
        assert tokens_remove_expired(now=issued.expires_at) == 1
