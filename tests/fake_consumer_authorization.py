"""A small Arrowhead ConsumerAuthorization on 127.0.0.1 (reference-dynamic §9), speaking the
Java DTOs over real HTTP:

- `authorization`/`verify`: POST /consumerauthorization/authorization/verify,
  AuthorizationVerifyRequestDTO → a bare boolean; only the provider or consumer named in the
  request may ask;
- `authorizationTokenManagement`/`generate-tokens`:
  POST /consumerauthorization/authorization/mgmt/token/generate[?unbound=true],
  {list: [AuthorizationTokenGenerationMgmtRequestDTO]} → 201 AuthorizationTokenMgmtListResponseDTO;
  with `unbound=true` only the systems in `unbound_whitelist` may ask;
- `authorizationToken`/`verify`: GET /consumerauthorization/authorization-token/token/verify/{token},
  asked by the provider → AuthorizationTokenVerifyResponseDTO (usage-limited tokens lose one use
  per verification, time-limited ones expire).

Policies are granted with `grant(consumer, provider, target, scope=None)`; scope None grants
every operation (the default `*` policy). Callers are identified with the declared policy.
Every request is recorded in `calls`; `fail_with` makes every answer that status;
`generate_answer` (status, body) replaces the answer of every generation.
"""
import base64
import datetime as dt
import hashlib
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from tests.fake_authentication import error_body, iso, utc_now
from tests.fake_system import FakeSystem, not_found

BASE = "/consumerauthorization"
VERIFY = f"{BASE}/authorization/verify"
GENERATE = f"{BASE}/authorization/mgmt/token/generate"
TOKEN_VERIFY = f"{BASE}/authorization-token/token/verify/"
SYSTEM_NAME = "ConsumerAuthorization"

_TOKEN_TYPES = {"TIME_LIMITED_TOKEN_AUTH": "TIME_LIMITED_TOKEN",
                "USAGE_LIMITED_TOKEN_AUTH": "USAGE_LIMITED_TOKEN",
                "BASE64_SELF_CONTAINED_TOKEN_AUTH": "SELF_CONTAINED_TOKEN"}
# The reference signs these with its private key, but only with SSL enabled; this fake speaks
# plain HTTP, so it fails them as the reference does without SSL.
_JWT_VARIANTS = ("RSA_SHA256_JSON_WEB_TOKEN_AUTH", "RSA_SHA512_JSON_WEB_TOKEN_AUTH")


@dataclass
class _Token:
    token_type: str
    consumer_cloud: str
    consumer: str
    provider: str
    target_type: str
    target: str
    scope: str
    expires_at: dt.datetime | None
    usage_left: int | None


class FakeConsumerAuthorization(FakeSystem):
    def __init__(self, *, unbound_whitelist: tuple[str, ...] = ("SimpleStoreServiceOrchestration",),
                 time_limit_seconds: int = 60, usage_limit: int = 5) -> None:
        self.unbound_whitelist = set(unbound_whitelist)
        self.time_limit_seconds = time_limit_seconds
        self.usage_limit = usage_limit
        self.generate_answer: tuple[int, Any] | None = None
        self._grants: set[tuple[str, str, str, str | None]] = set()
        self._tokens: dict[str, _Token] = {}  # sha256 of the token -> token
        super().__init__()

    def grant(self, consumer: str, provider: str, target: str, scope: str | None = None) -> None:
        with self._lock:
            self._grants.add((consumer, provider, target, scope))

    def revoke_all(self) -> None:
        with self._lock:
            self._grants.clear()

    def service_instances(self) -> dict[str, list[dict[str, Any]]]:
        """The interfaces to register in a (fake) ServiceRegistry, by service definition, as
        the reference registers them (generic_http)."""
        interface = self.http_interfaces
        return {
            "authorization": interface(f"{BASE}/authorization", {
                "verify": ("POST", "/verify"), "lookup": ("POST", "/lookup")}),
            "authorizationTokenManagement": interface(f"{BASE}/authorization/mgmt/token", {
                "generate-tokens": ("POST", "/generate"), "query-tokens": ("POST", "/query")}),
            "authorizationToken": interface(f"{BASE}/authorization-token", {
                "verify": ("GET", "/token/verify/{token}")}),
        }

    # --- operations -------------------------------------------------------------------------

    def _granted(self, consumer: str, provider: str, target: str, scope: str | None) -> bool:
        grants = self._grants
        if (consumer, provider, target, None) in grants:
            return True
        return scope is not None and (consumer, provider, target, scope) in grants

    def verify(self, caller: str, body: Any) -> tuple[int, Any]:
        if not isinstance(body, dict) or body.get("targetType") != "SERVICE_DEF":
            return 400, error_body(400, "INVALID_PARAMETER", "Invalid request", f"POST {VERIFY}")
        if caller not in (body.get("provider"), body.get("consumer")):
            return 403, error_body(403, "FORBIDDEN", "Only the related provider or consumer "
                                   "can use this operation", f"POST {VERIFY}")
        return 200, self._granted(body.get("consumer"), body.get("provider"),
                                  body.get("target"), body.get("scope") or None)

    def generate(self, caller: str, query: str, body: Any) -> tuple[int, Any]:
        unbound = parse_qs(query).get("unbound") == ["true"]
        if unbound and caller not in self.unbound_whitelist:
            return 403, error_body(403, "FORBIDDEN", f"{caller} has no permission for "
                                   "unbounded token generation request", f"POST {GENERATE}")
        requests = body.get("list") if isinstance(body, dict) else None
        if not isinstance(requests, list):
            return 400, error_body(400, "INVALID_PARAMETER", "Request payload is missing",
                                   f"POST {GENERATE}")
        entries = []
        for request in requests:
            variant = request.get("tokenVariant")
            if variant in _JWT_VARIANTS:
                return 400, error_body(400, "INVALID_PARAMETER", "JWT is supported only when "
                                       "SSL is enabled", f"POST {GENERATE}")
            if variant not in _TOKEN_TYPES:
                return 400, error_body(400, "INVALID_PARAMETER", f"Invalid token variant: "
                                       f"{variant}", f"POST {GENERATE}")
            if not unbound and not self._granted(request["consumer"], request["provider"],
                                                 request["target"], request.get("scope") or None):
                continue  # the reference keeps only what the policies allow, silently
            entries.append(self._issue(caller, variant, request))
        return 201, {"entries": entries, "count": len(entries)}

    def _issue(self, caller: str, variant: str, request: dict[str, Any]) -> dict[str, Any]:
        now = utc_now()
        token_type = _TOKEN_TYPES[variant]
        usage = self.usage_limit if token_type == "USAGE_LIMITED_TOKEN" else None
        expires = None if usage is not None else now + dt.timedelta(
            seconds=self.time_limit_seconds)
        scope = request.get("scope") or ""
        if token_type == "SELF_CONTAINED_TOKEN":
            raw = base64.urlsafe_b64encode("|".join(
                [request["consumerCloud"], request["consumer"], request["provider"],
                 request["target"], scope, request["targetType"], iso(expires)]).encode()).decode()
        else:
            raw = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("=")
        record = _Token(token_type, request["consumerCloud"], request["consumer"],
                        request["provider"], request["targetType"], request["target"], scope,
                        expires, usage)
        with self._lock:
            # One live token per (cloud, consumer, provider, targetType, target, scope).
            self._tokens = {key: value for key, value in self._tokens.items()
                            if (value.consumer_cloud, value.consumer, value.provider,
                                value.target_type, value.target, value.scope) !=
                            (record.consumer_cloud, record.consumer, record.provider,
                             record.target_type, record.target, record.scope)}
            self._tokens[hashlib.sha256(raw.encode()).hexdigest()] = record
        return {"tokenType": token_type, "variant": variant, "token": raw,
                "tokenReference": hashlib.sha256(raw.encode()).hexdigest()[:32],
                "requester": caller, "consumerCloud": record.consumer_cloud,
                "consumer": record.consumer, "provider": record.provider,
                "targetType": record.target_type, "target": record.target, "scope": scope,
                "createdAt": iso(now), "usageLimit": usage, "usageLeft": usage,
                "expiresAt": iso(expires) if expires else None}

    def token_verify(self, caller: str, token: str) -> tuple[int, Any]:
        with self._lock:
            record = self._tokens.get(hashlib.sha256(token.encode()).hexdigest())
            if record is None or record.provider != caller:
                return 200, {"verified": False}
            if record.token_type == "SELF_CONTAINED_TOKEN":
                return 400, error_body(400, "INVALID_PARAMETER", "Self-contained tokens are "
                                       "verified by the provider", f"GET {TOKEN_VERIFY}")
            verified = True
            if record.usage_left is not None:
                verified = record.usage_left > 0
                record.usage_left = max(0, record.usage_left - 1)
            elif record.expires_at is not None:
                verified = record.expires_at > utc_now()
        if not verified:
            return 200, {"verified": False}
        return 200, {"verified": True, "consumerCloud": record.consumer_cloud,
                     "consumer": record.consumer, "targetType": record.target_type,
                     "target": record.target, "scope": record.scope or None}

    def answer(self, method: str, path: str, caller: str | None, body: Any) -> tuple[int, Any]:
        parts = urlsplit(path)
        if method == "POST" and parts.path == VERIFY:
            return self.verify(caller, body)
        if method == "POST" and parts.path == GENERATE:
            return self.generate_answer or self.generate(caller, parts.query, body)
        if method == "GET" and parts.path.startswith(TOKEN_VERIFY):
            return self.token_verify(caller, unquote(parts.path[len(TOKEN_VERIFY):]))
        return not_found(method, path)
