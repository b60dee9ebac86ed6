"""The calls ConsumerAuthorization offers us (reference-dynamic §9.2; audit §2), found and
called like every peer (clients.peers): `authorization`/`verify`, the management filter's
question, `authorizationManagement`/`check-policies`, the flexible store's consumer check, and
`authorizationTokenManagement`/`generate-tokens`, the tokens of a pull or push.
What is asked, and what the answers mean, is identity's (identity/consumer_authorization.py)
and orchestration's (orchestration/tokens/ca_tokens.py)."""
from typing import Any

from clients import peers

SYSTEM = "ConsumerAuthorization"
AUTHORIZATION = peers.PeerService(
    system=SYSTEM, definition="authorization",
    url_setting="CONSUMER_AUTHORIZATION_URL", base_path="/consumerauthorization/authorization",
    operations={"verify": peers.PeerOperation("POST", "/verify")})
AUTHORIZATION_MANAGEMENT = peers.PeerService(
    system=SYSTEM, definition="authorizationManagement",
    url_setting="CONSUMER_AUTHORIZATION_URL",
    base_path="/consumerauthorization/authorization/mgmt",
    operations={"check-policies": peers.PeerOperation("POST", "/check")})
TOKEN_MANAGEMENT = peers.PeerService(
    system=SYSTEM, definition="authorizationTokenManagement",
    url_setting="CONSUMER_AUTHORIZATION_URL",
    base_path="/consumerauthorization/authorization/mgmt/token",
    operations={"generate-tokens": peers.PeerOperation("POST", "/generate")})


def authorization_verify(body: dict[str, Any]) -> Any:
    """`authorization`/`verify`: the bare answer (a boolean, when the CA behaves). Raises
    PeerUnavailable or PeerRefused."""
    return peers.call(AUTHORIZATION, "verify", body=body)


def policies_check(questions: list[dict[str, Any]]) -> Any:
    """`authorizationManagement`/`check-policies` of AuthorizationVerifyRequestDTOs: the bare
    answer (AuthorizationVerifyListResponseDTO when the CA behaves). Raises PeerUnavailable or
    PeerRefused."""
    return peers.call(AUTHORIZATION_MANAGEMENT, "check-policies", body={"list": questions})


def tokens_generate_unbound(requests: list[dict[str, Any]]) -> Any:
    """`generate-tokens` with `unbound=true` of the AuthorizationTokenGenerationMgmtRequestDTOs:
    the bare answer. Raises PeerUnavailable or PeerRefused."""
    return peers.call(TOKEN_MANAGEMENT, "generate-tokens", body={"list": requests},
                      query=[("unbound", "true")])
