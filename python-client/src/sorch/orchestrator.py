"""The HTTP operations of the ServiceOrchestration system, called as one system."""
import http.client
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

from sorch.errors import ClientError, ServiceError

DEFAULT_URL = "http://127.0.0.1:8465"
ORCHESTRATION = "/serviceorchestration/orchestration"
RULES = f"{ORCHESTRATION}/mgmt/simple-store"
INSTANCES = f"{ORCHESTRATION}/mgmt/service-instances"
TOKEN_VERIFY = "/serviceorchestration/authorization-token/verify"


class Orchestrator:
    """The service at `url`, called as one system: `SYSTEM//<system>` under the service's
    `declared` identity policy, `IDENTITY-TOKEN//<token>` under `token` and `outsourced`.
    Every method raises `ServiceError` for an error answer and `ClientError` when the service
    cannot be reached or its answer read."""

    def __init__(self, url: str = DEFAULT_URL, *, system: str | None = None,
                 token: str | None = None, timeout: float = 30) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.authorization = (f"Bearer IDENTITY-TOKEN//{token}" if token else
                              f"Bearer SYSTEM//{system}" if system else None)

    def call(self, method: str, path: str, body: Any = None,
             query: Mapping[str, Any] | None = None) -> tuple[int, Any]:
        """The status and the decoded answer: JSON decoded, text for `text/plain`, None for
        an empty body."""
        url = self.url + path + (f"?{urllib.parse.urlencode(query, doseq=True)}" if query else "")
        headers = {"Accept": "application/json"}
        if self.authorization:
            headers["Authorization"] = self.authorization
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read().decode()
                status, kind = response.status, response.headers.get_content_type()
        except urllib.error.HTTPError as error:
            raise ServiceError.from_answer(error.code, str(error.reason),
                                           error.read().decode(errors="replace")) from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as error:
            reason = getattr(error, "reason", error)
            if isinstance(reason, OSError) and reason.strerror:
                reason = reason.strerror  # "Connection refused", without "[Errno 111]"
            raise ClientError(f"cannot reach {self.url}: {reason}") from None
        if not raw or kind != "application/json":
            return status, raw or None
        try:
            return status, json.loads(raw)
        except ValueError:
            raise ClientError(f"{method} {path}: the answer is not JSON: {raw[:200]}") from None

    def _answer(self, method: str, path: str, body: Any = None,
                query: Mapping[str, Any] | None = None) -> Any:
        return self.call(method, path, body, query)[1]

    # --- consumers -----------------------------------------------------------------------

    def pull(self, request: dict[str, Any]) -> dict[str, Any]:
        """The orchestration response `{results, warnings}` for `request`
        (`orchestration_request()` builds one)."""
        return self._answer("POST", f"{ORCHESTRATION}/pull", request)

    def subscribe(self, request: dict[str, Any], topic: str, *, trigger: bool = False,
                  duration: int | None = None) -> str:
        """Subscribe with an MQTT notify interface on `topic`; the subscription id. The same
        requester subscribing again for the same service replaces its subscription."""
        body: dict[str, Any] = {"orchestrationRequest": request,
                                "notifyInterface": {"protocol": "MQTT",
                                                    "properties": {"topic": topic}}}
        if duration:
            body["duration"] = duration
        answer = self._answer("POST", f"{ORCHESTRATION}/subscribe", body,
                              {"trigger": "true" if trigger else "false"})
        return str(answer).strip()

    def unsubscribe(self, subscription_id: str) -> bool:
        """End a subscription: True when it was removed, False when there was none."""
        status, _ = self.call("DELETE", f"{ORCHESTRATION}/unsubscribe/"
                              + urllib.parse.quote(subscription_id, safe=""))
        return status == 200

    # --- providers -----------------------------------------------------------------------

    def verify_token(self, token: str) -> dict[str, Any]:
        """Whether `token` was issued by pull for a consumer of the calling provider:
        `{"verified": true, "consumer", "target", "scope", ...}` or `{"verified": false}`."""
        return self._answer("GET", f"{TOKEN_VERIFY}/{urllib.parse.quote(token, safe='')}")

    # --- management: rules (simple store) ------------------------------------------------

    def rules_query(self, filters: dict[str, Any] | None = None) -> dict[str, Any]:
        """`{entries, count}`: the rules matching `filters` (`consumerNames`,
        `serviceDefinitions`, `pagination`, ...; none: every rule)."""
        return self._answer("POST", f"{RULES}/query", filters or {})

    def rules_create(self, entries: list[dict[str, Any]]) -> dict[str, Any]:
        """Create `[{consumer, serviceInstanceId, priority}]`, all or nothing:
        `{entries, count}`."""
        return self._answer("POST", f"{RULES}/create", {"entries": entries})

    def rules_modify_priorities(self, priorities: Mapping[str, int]) -> dict[str, Any]:
        """Give rules (by id) new priorities, applied together: `{entries, count}`."""
        return self._answer("PUT", f"{RULES}/modify-priorities", dict(priorities))

    def rules_remove(self, ids: list[str]) -> None:
        """Remove rules by id (unknown ids are ignored)."""
        self.call("DELETE", f"{RULES}/remove", query={"uuids": ids})

    # --- management: service instance catalog -------------------------------------------

    def instances_query(self, filters: dict[str, Any] | None = None) -> dict[str, Any]:
        """`{entries, count}`: the catalog's instances matching `filters` (`providerNames`,
        `serviceDefinitionNames`, `instanceIds`, ...; none: every instance)."""
        return self._answer("POST", f"{INSTANCES}/query", filters or {})

    def instances_create(self, instances: list[dict[str, Any]]) -> dict[str, Any]:
        """Create instances (`http_instance()` builds one); an existing id is replaced:
        `{entries, count}`."""
        return self._answer("POST", f"{INSTANCES}/create", {"instances": instances})

    def instances_remove(self, ids: list[str]) -> None:
        """Remove instances by id (unknown ids are ignored)."""
        self.call("DELETE", f"{INSTANCES}/remove", query={"ids": ids})
