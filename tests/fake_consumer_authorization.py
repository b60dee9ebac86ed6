"""A small Arrowhead ConsumerAuthorization on 127.0.0.1 (reference-dynamic §9), speaking the
Java DTOs over real HTTP (held to tests/recordings/consumerauthorization.json):

- `authorization`/`grant`: POST /consumerauthorization/authorization/grant,
  AuthorizationGrantRequestDTO → 201 AuthorizationPolicyResponseDTO; the caller is the provider
  and creates its provider-level policy for (cloud, targetType, target); granting the same again
  answers 200 with the existing policy, different details 400;
- `authorization`/`verify`: POST /consumerauthorization/authorization/verify,
  AuthorizationVerifyRequestDTO → a bare boolean; only the provider or consumer named in the
  request may ask (a missing one is the caller);
- `authorizationTokenManagement`/`generate-tokens`:
  POST /consumerauthorization/authorization/mgmt/token/generate[?unbound=true],
  {list: [AuthorizationTokenGenerationMgmtRequestDTO]} → 201 AuthorizationTokenMgmtListResponseDTO;
  with `unbound=true` only the systems in `unbound_whitelist` may ask, and the policies are not
  consulted;
- `authorizationToken`/`verify`:
  GET /consumerauthorization/authorization-token/token/verify/{token}, asked by the provider
  → AuthorizationTokenVerifyResponseDTO (usage-limited tokens lose one use per verification,
  time-limited ones expire).

Like the Java DTOs, answers leave null fields out. Policies can also be granted from a test with
`grant(consumer, provider, target, scope=None)`, which lets the consumer into the provider-level
policy of that target (scope None: every operation, the default `*` policy). Callers are
identified with the declared policy. Every request is recorded in `calls`; `fail_with` makes
every answer that status; `generate_answer` (status, body) replaces the answer of every
generation.
"""
import base64
import dataclasses
import datetime as dt
import hashlib
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from tests.fake_authentication import error_body, iso, utc_now
from tests.fake_system import FakeSystem, not_found, without_nulls

BASE = "/consumerauthorization"
GRANT = f"{BASE}/authorization/grant"
VERIFY = f"{BASE}/authorization/verify"
CHECK = f"{BASE}/authorization/mgmt/check"
GENERATE = f"{BASE}/authorization/mgmt/token/generate"
TOKEN_VERIFY = f"{BASE}/authorization-token/token/verify/"
SYSTEM_NAME = "ConsumerAuthorization"
LOCAL = "LOCAL"
DEFAULT_SCOPE = "*"  # the scope of a policy's default policy

_TARGET_TYPES = ("SERVICE_DEF", "EVENT_TYPE")
_POLICY_TYPES = ("ALL", "WHITELIST", "BLACKLIST", "SYS_METADATA")
_TOKEN_TYPES = {"TIME_LIMITED_TOKEN_AUTH": "TIME_LIMITED_TOKEN",
                "USAGE_LIMITED_TOKEN_AUTH": "USAGE_LIMITED_TOKEN",
                "BASE64_SELF_CONTAINED_TOKEN_AUTH": "SELF_CONTAINED_TOKEN"}
# The reference signs these with its private key, but only with SSL enabled; this fake speaks
# plain HTTP, so it fails them as the reference does without SSL.
_JWT_VARIANTS = ("RSA_SHA256_JSON_WEB_TOKEN_AUTH", "RSA_SHA512_JSON_WEB_TOKEN_AUTH")
_DIFFERENT = ("A provider level policy is already existing with the specified cloud / provider "
              "/ target type / target combination, but the policy details are different")


class _Invalid(Exception):
    """A request the reference refuses with 400 INVALID_PARAMETER; the message is its own."""


@dataclass
class _Policy:
    """One policy of one scope: who of the consumers it lets in. WHITELIST: the listed ones;
    BLACKLIST: all but the listed ones; ALL: everyone. SYS_METADATA compares the consumer's
    metadata (asked from the ServiceRegistry) with a requirement; this fake knows no metadata,
    so it lets no one in, as the reference does when the lookup fails."""
    policy_type: str
    systems: list[str] = field(default_factory=list)
    metadata: dict[str, Any] | None = None

    def allows(self, consumer: str) -> bool:
        if self.policy_type == "ALL":
            return True
        if self.policy_type == "WHITELIST":
            return consumer in self.systems
        if self.policy_type == "BLACKLIST":
            return consumer not in self.systems
        return False

    def admit(self, consumer: str) -> None:
        """Change the policy so that it lets `consumer` in (for `grant`)."""
        if self.policy_type == "WHITELIST" and consumer not in self.systems:
            self.systems.append(consumer)
        elif self.policy_type == "BLACKLIST" and consumer in self.systems:
            self.systems.remove(consumer)
        elif self.policy_type == "SYS_METADATA":
            self.policy_type, self.systems, self.metadata = "WHITELIST", [consumer], None

    def same_as(self, other: "_Policy") -> bool:
        """The reference's comparison of a policy with a repeated grant: order of the lists
        does not matter."""
        return (self.policy_type, sorted(self.systems), self.metadata) == \
            (other.policy_type, sorted(other.systems), other.metadata)

    def dto(self) -> dict[str, Any]:
        """AuthorizationPolicyDTO."""
        lists = self.policy_type in ("WHITELIST", "BLACKLIST")
        return without_nulls({"policyType": self.policy_type,
                              "policyList": list(self.systems) if lists else None,
                              "policyMetadataRequirement": self.metadata})

    @classmethod
    def parse(cls, dto: Any, default: bool) -> "_Policy":
        """An AuthorizationPolicyRequestDTO checked as the reference checks it; the list loses
        its duplicates."""
        if not isinstance(dto, dict):
            raise _Invalid(("Default p" if default else "P") + "olicy is missing")
        name = dto.get("policyType")
        if not isinstance(name, str) or not name.strip():
            raise _Invalid("Policy type is missing")
        policy_type = name.strip().upper()
        if policy_type not in _POLICY_TYPES:
            raise _Invalid(f"Policy type is invalid: {name}")
        if policy_type in ("WHITELIST", "BLACKLIST"):
            systems = dto.get("policyList")
            if not isinstance(systems, list) or not systems:
                raise _Invalid("List is empty")
            if not all(isinstance(system, str) and system.strip() for system in systems):
                raise _Invalid("List contains null or empty element")
            return cls(policy_type, list(dict.fromkeys(system.strip() for system in systems)))
        if policy_type == "SYS_METADATA":
            metadata = dto.get("policyMetadataRequirement")
            if not isinstance(metadata, dict) or not metadata:
                raise _Invalid("Metadata requirements is empty")
            return cls(policy_type, metadata=metadata)
        return cls(policy_type)


@dataclass
class _ProviderPolicy:
    """A provider-level policy: what a provider allows of one target (service definition or
    event type) of one cloud, a default policy (scope `*`) and optional policies per scope
    (operation) that replace the default for that scope."""
    cloud: str
    provider: str
    target_type: str
    target: str
    description: str | None
    policies: dict[str, _Policy]  # scope -> policy; DEFAULT_SCOPE always present
    created_at: dt.datetime = field(default_factory=utc_now)

    @property
    def instance_id(self) -> str:
        return "|".join(("PR", self.cloud, self.provider, self.target_type, self.target))

    def allows(self, consumer: str, scope: str | None) -> bool:
        """The reference's evaluation: for a scope, its own policy if there is one, the default
        one otherwise; without a scope every policy must let the consumer in."""
        if scope is None:
            return all(policy.allows(consumer) for policy in self.policies.values())
        return self.policies.get(scope, self.policies[DEFAULT_SCOPE]).allows(consumer)

    def same_as(self, other: "_ProviderPolicy") -> bool:
        return self.policies.keys() == other.policies.keys() and all(
            policy.same_as(other.policies[scope]) for scope, policy in self.policies.items())

    def dto(self) -> dict[str, Any]:
        """AuthorizationPolicyResponseDTO (level PROVIDER, created by the provider)."""
        scoped = {scope: policy.dto() for scope, policy in self.policies.items()
                  if scope != DEFAULT_SCOPE}
        return without_nulls({
            "instanceId": self.instance_id, "level": "PROVIDER", "cloud": self.cloud,
            "provider": self.provider, "targetType": self.target_type, "target": self.target,
            "description": self.description,
            "defaultPolicy": self.policies[DEFAULT_SCOPE].dto(),
            "scopedPolicies": scoped or None, "createdBy": self.provider,
            "createdAt": iso(self.created_at)})


@dataclass
class _Token:
    token_type: str
    consumer_cloud: str
    consumer: str
    provider: str
    target_type: str
    target: str
    scope: str | None
    expires_at: dt.datetime | None
    usage_left: int | None


class FakeConsumerAuthorization(FakeSystem):
    def __init__(self, *, unbound_whitelist: tuple[str, ...] = ("SimpleStoreServiceOrchestration",),
                 time_limit_seconds: int = 60, usage_limit: int = 5) -> None:
        self.unbound_whitelist = set(unbound_whitelist)
        self.time_limit_seconds = time_limit_seconds
        self.usage_limit = usage_limit
        self.generate_answer: tuple[int, Any] | None = None
        # (cloud, provider, targetType, target) -> the provider's policy
        self._policies: dict[tuple[str, str, str, str], _ProviderPolicy] = {}
        self._tokens: dict[str, _Token] = {}  # sha256 of the token -> token
        super().__init__()

    def grant(self, consumer: str, provider: str, target: str, scope: str | None = None) -> None:
        """Let `consumer` use `provider`'s service definition `target` in the local cloud: the
        whole service (scope None) or one operation. The same state as the provider's own
        grants; a new scope starts as a copy of the default policy, so earlier grants of the
        whole service still cover it."""
        with self._lock:
            key = (LOCAL, provider, "SERVICE_DEF", target)
            policy = self._policies.setdefault(key, _ProviderPolicy(
                *key, description=None, policies={DEFAULT_SCOPE: _Policy("WHITELIST")}))
            if scope is None:
                for each in policy.policies.values():
                    each.admit(consumer)
                return
            default = policy.policies[DEFAULT_SCOPE]
            policy.policies.setdefault(scope, dataclasses.replace(
                default, systems=list(default.systems))).admit(consumer)

    def revoke_all(self) -> None:
        with self._lock:
            self._policies.clear()

    def service_instances(self) -> dict[str, list[dict[str, Any]]]:
        """The interfaces to register in a (fake) ServiceRegistry, by service definition, as
        the reference registers them (generic_http)."""
        interface = self.http_interfaces
        return {
            "authorization": interface(f"{BASE}/authorization", {
                "grant": ("POST", "/grant"), "verify": ("POST", "/verify"),
                "lookup": ("POST", "/lookup")}),
            "authorizationTokenManagement": interface(f"{BASE}/authorization/mgmt/token", {
                "generate-tokens": ("POST", "/generate"), "query-tokens": ("POST", "/query")}),
            "authorizationToken": interface(f"{BASE}/authorization-token", {
                "verify": ("GET", "/token/verify/{token}")}),
        }

    # --- operations -------------------------------------------------------------------------

    def _allows(self, cloud: str, provider: str, consumer: str, target_type: str, target: str,
                scope: str | None) -> bool:
        """Whether the provider's policy of the target lets the consumer in; no policy: no.
        (The reference asks its management-level policies first; this fake has none.)"""
        policy = self._policies.get((cloud, provider, target_type, target))
        return policy is not None and policy.allows(consumer, scope)

    def grant_policy(self, caller: str, body: Any) -> tuple[int, Any]:
        """The caller, as provider, creates its policy of one target: 201 with the policy; the
        same policy again: 200 with the existing one (its description updated); other details
        for the same target: 400."""
        try:
            policy = self._parse_grant(caller, body)
        except _Invalid as invalid:
            return 400, error_body(400, "INVALID_PARAMETER", str(invalid), f"POST {GRANT}")
        key = (policy.cloud, policy.provider, policy.target_type, policy.target)
        existing = self._policies.get(key)
        if existing is None:
            self._policies[key] = policy
            return 201, policy.dto()
        if not existing.same_as(policy):
            return 400, error_body(400, "INVALID_PARAMETER", _DIFFERENT, f"POST {GRANT}")
        existing.description = policy.description
        return 200, existing.dto()

    @staticmethod
    def _parse_grant(provider: str, body: Any) -> _ProviderPolicy:
        """An AuthorizationGrantRequestDTO checked as the reference checks it (missing cloud:
        LOCAL)."""
        if not isinstance(body, dict):
            raise _Invalid("Request payload is missing")
        target_type = _target_type(body.get("targetType"))
        target = body.get("target")
        if not isinstance(target, str) or not target.strip():
            raise _Invalid("Target is missing")
        policies = {DEFAULT_SCOPE: _Policy.parse(body.get("defaultPolicy"), default=True)}
        scoped = body.get("scopedPolicies") or {}
        if not isinstance(scoped, dict):
            raise _Invalid("Invalid scoped policies")
        for scope, dto in scoped.items():
            policies[scope.strip()] = _Policy.parse(dto, default=False)
        policies = {DEFAULT_SCOPE: policies.pop(DEFAULT_SCOPE), **policies}
        return _ProviderPolicy(body.get("cloud") or LOCAL, provider, target_type,
                               target.strip(), body.get("description"), policies)

    def verify(self, caller: str, body: Any) -> tuple[int, Any]:
        """Whether the policies let the consumer use the provider's target (for the scope, or
        for every scope without one); asked by one of the two."""
        def invalid(message: str) -> tuple[int, Any]:
            return 400, error_body(400, "INVALID_PARAMETER", message, f"POST {VERIFY}")

        if not isinstance(body, dict):
            return invalid("Request payload is missing")
        if not body.get("provider") and not body.get("consumer"):
            return invalid("Either provider or consumer must be specified")
        try:
            target_type = _target_type(body.get("targetType"))
        except _Invalid as error:
            return invalid(str(error))
        if not body.get("target"):
            return invalid("Target is missing")
        provider, consumer = body.get("provider") or caller, body.get("consumer") or caller
        if caller not in (provider, consumer):
            return 403, error_body(403, "FORBIDDEN", "Only the related provider or consumer "
                                   "can use this operation", f"POST {VERIFY}")
        return 200, self._allows(body.get("cloud") or LOCAL, provider, consumer, target_type,
                                 body["target"], body.get("scope") or None)

    def check(self, body: Any) -> tuple[int, Any]:
        """`authorizationManagement`/`check-policies`: each question answered `granted`, in
        the order asked (a management operation: any management system may ask)."""
        questions = body.get("list") if isinstance(body, dict) else None
        if not questions:
            return 400, error_body(400, "INVALID_PARAMETER", "Request payload is missing",
                                   f"POST {CHECK}")
        entries = []
        for question in questions:
            try:
                target_type = _target_type(question.get("targetType"))
            except _Invalid as error:
                return 400, error_body(400, "INVALID_PARAMETER", str(error), f"POST {CHECK}")
            cloud, scope = question.get("cloud") or LOCAL, question.get("scope") or None
            entries.append(without_nulls({
                "provider": question.get("provider"), "consumer": question.get("consumer"),
                "cloud": cloud, "targetType": target_type, "target": question.get("target"),
                "scope": scope,
                "granted": self._allows(cloud, question.get("provider"),
                                        question.get("consumer"), target_type,
                                        question.get("target"), scope)}))
        return 200, {"entries": entries, "count": len(entries)}

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
            if not unbound and not self._allows(
                    request["consumerCloud"], request["provider"], request["consumer"],
                    request["targetType"], request["target"], request.get("scope") or None):
                continue  # the reference keeps only what the policies allow, silently
            entries.append(self._issue(caller, variant, request))
        return 201, {"entries": entries, "count": len(entries)}

    def _issue(self, caller: str, variant: str, request: dict[str, Any]) -> dict[str, Any]:
        now = utc_now()
        token_type = _TOKEN_TYPES[variant]
        usage = self.usage_limit if token_type == "USAGE_LIMITED_TOKEN" else None
        expires = None if usage is not None else now + dt.timedelta(
            seconds=self.time_limit_seconds)
        scope = request.get("scope") or None
        if token_type == "SELF_CONTAINED_TOKEN":
            raw = base64.urlsafe_b64encode("|".join(
                [request["consumerCloud"], request["consumer"], request["provider"],
                 request["target"], scope or "", request["targetType"], iso(expires)]).encode()
            ).decode()
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
        return without_nulls({
            "tokenType": token_type, "variant": variant, "token": raw,
            "tokenReference": hashlib.sha256(raw.encode()).hexdigest()[:32],
            "requester": caller, "consumerCloud": record.consumer_cloud,
            "consumer": record.consumer, "provider": record.provider,
            "targetType": record.target_type, "target": record.target, "scope": scope,
            "createdAt": iso(now), "usageLimit": usage, "usageLeft": usage,
            "expiresAt": iso(expires) if expires else None})

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
        return 200, without_nulls({
            "verified": True, "consumerCloud": record.consumer_cloud,
            "consumer": record.consumer, "targetType": record.target_type,
            "target": record.target, "scope": record.scope})

    def answer(self, method: str, path: str, caller: str | None, body: Any) -> tuple[int, Any]:
        parts = urlsplit(path)
        if method == "POST" and parts.path == GRANT:
            return self.grant_policy(caller, body)
        if method == "POST" and parts.path == VERIFY:
            return self.verify(caller, body)
        if method == "POST" and parts.path == CHECK:
            return self.check(body)
        if method == "POST" and parts.path == GENERATE:
            return self.generate_answer or self.generate(caller, parts.query, body)
        if method == "GET" and parts.path.startswith(TOKEN_VERIFY):
            return self.token_verify(caller, unquote(parts.path[len(TOKEN_VERIFY):]))
        return not_found(method, path)


def _target_type(name: Any) -> str:
    """An AuthorizationTargetType as the reference reads it (case and blanks ignored)."""
    if not isinstance(name, str) or not name.strip():
        raise _Invalid("Target type is missing")
    if name.strip().upper() not in _TARGET_TYPES:
        raise _Invalid(f"Target type is invalid: {name}")
    return name.strip().upper()
