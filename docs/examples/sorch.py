#!/usr/bin/env python3
"""sorch: a command-line client of the ServiceOrchestration core system, and the small client
library the consumer and provider examples import (standard library + paho-mqtt only).

    python docs/examples/sorch.py --system Sysop rules list
    python docs/examples/sorch.py --system temperature-consumer pull --service temperature-info

Every failure (an error answer of the service, an unreachable service or broker) is printed as
one line on stderr and ends the command with exit code 1. See docs/examples/README.md.
"""
import argparse
import http.client
import json
import signal
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

DEFAULT_URL = "http://127.0.0.1:8465"
DEFAULT_MQTT = "mqtt://127.0.0.1:1883"
ORCHESTRATION = "/serviceorchestration/orchestration"
RULES = f"{ORCHESTRATION}/mgmt/simple-store"
INSTANCES = f"{ORCHESTRATION}/mgmt/service-instances"
TOKEN_VERIFY = "/serviceorchestration/authorization-token/verify"


class ClientError(Exception):
    """A failure worth one line to the user: the service's error envelope, or why the service
    or the broker could not be reached."""


class Orchestrator:
    """The HTTP operations of the service, called as one system (`SYSTEM//<name>` under the
    `declared` policy, `IDENTITY-TOKEN//<token>` under `token` and `outsourced`)."""

    def __init__(self, url: str = DEFAULT_URL, *, system: str | None = None,
                 token: str | None = None, timeout: float = 30) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.authorization = (f"Bearer IDENTITY-TOKEN//{token}" if token else
                              f"Bearer SYSTEM//{system}" if system else None)

    def call(self, method: str, path: str, body: Any = None,
             query: dict[str, Any] | None = None) -> Any:
        """The decoded JSON answer (text for `text/plain`, None for an empty body)."""
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
                kind = response.headers.get_content_type()
        except urllib.error.HTTPError as error:
            raise ClientError(_describe_error_answer(error)) from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as error:
            reason = getattr(error, "reason", error)
            if isinstance(reason, OSError) and reason.strerror:
                reason = reason.strerror  # "Connection refused", without "[Errno 111]"
            raise ClientError(f"cannot reach {self.url}: {reason}") from None
        if not raw or kind != "application/json":
            return raw or None
        try:
            return json.loads(raw)
        except ValueError:
            raise ClientError(f"{method} {path}: the answer is not JSON: {raw[:200]}") from None

    # --- consumers -----------------------------------------------------------------------

    def pull(self, request: dict[str, Any]) -> dict[str, Any]:
        return self.call("POST", f"{ORCHESTRATION}/pull", request)

    def subscribe(self, request: dict[str, Any], topic: str, *, trigger: bool = False,
                  duration: int | None = None) -> str:
        """Subscribe with an MQTT notify interface on `topic`; the subscription id."""
        body: dict[str, Any] = {"orchestrationRequest": request,
                                "notifyInterface": {"protocol": "MQTT",
                                                    "properties": {"topic": topic}}}
        if duration:
            body["duration"] = duration
        return self.call("POST", f"{ORCHESTRATION}/subscribe", body,
                         {"trigger": "true" if trigger else "false"}).strip()

    def unsubscribe(self, subscription_id: str) -> None:
        self.call("DELETE", f"{ORCHESTRATION}/unsubscribe/"
                  + urllib.parse.quote(subscription_id, safe=""))

    # --- providers -----------------------------------------------------------------------

    def verify_token(self, token: str) -> dict[str, Any]:
        """Ask whether `token` was issued by pull for a consumer of the calling provider:
        `{"verified": true, "consumer", "target", "scope", ...}` or `{"verified": false}`."""
        return self.call("GET", f"{TOKEN_VERIFY}/{urllib.parse.quote(token, safe='')}")

    # --- management ----------------------------------------------------------------------

    def rules_list(self, filters: dict[str, Any]) -> dict[str, Any]:
        return self.call("POST", f"{RULES}/query", filters)

    def rules_create(self, entries: list[dict[str, Any]]) -> dict[str, Any]:
        return self.call("POST", f"{RULES}/create", {"entries": entries})

    def rules_remove(self, ids: list[str]) -> None:
        self.call("DELETE", f"{RULES}/remove", query={"uuids": ids})

    def instances_list(self, filters: dict[str, Any]) -> dict[str, Any]:
        return self.call("POST", f"{INSTANCES}/query", filters)

    def instances_register(self, instances: list[dict[str, Any]]) -> dict[str, Any]:
        """Create the instances (an existing id is replaced)."""
        return self.call("POST", f"{INSTANCES}/create", {"instances": instances})

    def instances_remove(self, ids: list[str]) -> None:
        self.call("DELETE", f"{INSTANCES}/remove", query={"ids": ids})


def _describe_error_answer(error: urllib.error.HTTPError) -> str:
    """`<status> <exceptionType>: <errorMessage> (<origin>)` from the service's envelope;
    the status and the start of the body for anything else (a proxy's page)."""
    raw = error.read().decode(errors="replace")
    try:
        envelope = json.loads(raw)
        message, kind = envelope["errorMessage"], envelope.get("exceptionType", "")
    except (ValueError, KeyError, TypeError):
        return f"{error.code} {error.reason}: {' '.join(raw.split())[:200]}".rstrip(": ")
    origin = f" ({envelope['origin']})" if envelope.get("origin") else ""
    return f"{error.code} {kind}: {message}{origin}"


def orchestration_request(service: str | None, *, matchmaking: bool = False,
                          operations: list[str] | None = None) -> dict[str, Any]:
    """A pull (or subscription) request body."""
    request: dict[str, Any] = {}
    if service or operations:
        request["serviceRequirement"] = {key: value for key, value in (
            ("serviceDefinition", service), ("operations", operations)) if value}
    if matchmaking:
        request["orchestrationFlags"] = {"MATCHMAKING": True}
    return request


def http_instance(*, provider: str, service: str, version: str, address: str, port: int,
                  base_path: str, policy: str = "NONE",
                  operations: dict[str, tuple[str, str]] | None = None,
                  metadata: dict[str, Any] | None = None,
                  expires_at: str | None = None) -> dict[str, Any]:
    """A catalog instance with one `generic_http` interface; `operations` maps a name to
    `(method, path)`."""
    properties: dict[str, Any] = {"accessAddresses": [address], "accessPort": port,
                                  "basePath": base_path}
    if operations:
        properties["operations"] = {name: {"method": method, "path": path}
                                    for name, (method, path) in operations.items()}
    instance: dict[str, Any] = {
        "systemName": provider, "serviceDefinitionName": service, "version": version,
        "metadata": metadata or {},
        "interfaces": [{"templateName": "generic_http", "policy": policy,
                        "properties": properties}]}
    if expires_at:
        instance["expiresAt"] = expires_at
    return instance


def describe_result(result: dict[str, Any]) -> str:
    """One line for a pull result: id, where to call it, its tokens."""
    parts = [result["serviceInstanceId"]]
    for interface in result.get("interfaces", []):
        properties = interface.get("properties", {})
        addresses = ",".join(properties.get("accessAddresses", []))
        parts.append(f"{interface.get('templateName')} {addresses}:{properties.get('accessPort')}"
                     f"{properties.get('basePath', '')} policy={interface.get('policy')}")
    for policy, by_operation in (result.get("authorizationTokens") or {}).items():
        for operation, token in by_operation.items():
            parts.append(f"token[{operation}]={token['token']}")
    if result.get("metadata"):
        parts.append("metadata=" + json.dumps(result["metadata"], sort_keys=True))
    return "  ".join(parts)


# --- MQTT ----------------------------------------------------------------------------------


class PushListener:
    """Receives the pushes of subscriptions on one topic of an MQTT broker
    (`mqtt://[user:password@]host[:port]`, `mqtts://` for TLS with the system's CAs).
    Calls `on_push(payload)` with each push's orchestration response, in a paho thread."""

    def __init__(self, broker_url: str, topic: str,
                 on_push: Callable[[dict[str, Any]], None], timeout: float = 10) -> None:
        from paho.mqtt.client import Client
        from paho.mqtt.enums import CallbackAPIVersion

        parts = urllib.parse.urlsplit(broker_url)
        if parts.scheme not in ("mqtt", "mqtts") or not parts.hostname:
            raise ClientError(f"invalid MQTT broker URL {broker_url!r} "
                              "(expected mqtt://host:port or mqtts://host:port)")
        self.topic = topic
        self._on_push = on_push
        self._subscribed = threading.Event()
        self._client = Client(callback_api_version=CallbackAPIVersion.VERSION2)
        if parts.username:
            self._client.username_pw_set(urllib.parse.unquote(parts.username),
                                         urllib.parse.unquote(parts.password or ""))
        if parts.scheme == "mqtts":
            self._client.tls_set()
        self._client.on_connect = lambda client, *args: client.subscribe(topic, qos=1)
        self._client.on_subscribe = lambda *args: self._subscribed.set()
        self._client.on_message = self._message
        port = parts.port or (8883 if parts.scheme == "mqtts" else 1883)
        try:
            self._client.connect(parts.hostname, port)
        except OSError as error:
            raise ClientError(f"cannot reach the MQTT broker {parts.hostname}:{port}: "
                              f"{getattr(error, 'strerror', None) or error}") from None
        self._client.loop_start()
        if not self._subscribed.wait(timeout):
            self.close()
            raise ClientError(f"the MQTT broker {parts.hostname}:{port} did not confirm the "
                              f"subscription to {topic}")

    def _message(self, client: Any, userdata: Any, message: Any) -> None:
        try:
            envelope = json.loads(message.payload)
        except ValueError:
            print(f"ignored a message that is not JSON on {message.topic}", file=sys.stderr)
            return
        # The service wraps the response: {"receiver", "sender", "payload": <response>}.
        self._on_push(envelope.get("payload", envelope) if isinstance(envelope, dict) else {})

    def close(self) -> None:
        self._client.disconnect()
        self._client.loop_stop()


def wait_for_pushes(broker_url: str, topic: str, on_push: Callable[[dict[str, Any]], None], *,
                    ready: Callable[[], None] | None = None, max_pushes: int = 0,
                    timeout: float = 0) -> int:
    """Listen on `topic` until `max_pushes` pushes came (0: no limit), `timeout` seconds
    passed (0: none), or SIGINT/SIGTERM; `ready` runs once the listener is subscribed (e.g.
    to subscribe at the service, so that no push is missed). Returns the pushes received."""
    received = 0
    done = threading.Event()

    def handle(payload: dict[str, Any]) -> None:
        nonlocal received
        received += 1
        on_push(payload)
        if max_pushes and received >= max_pushes:
            done.set()

    previous = {sig: signal.signal(sig, lambda *_: done.set())
                for sig in (signal.SIGINT, signal.SIGTERM)}
    listener = PushListener(broker_url, topic, handle)
    try:
        if ready:
            ready()
        deadline = time.monotonic() + timeout if timeout else None
        while not done.wait(0.2):
            if deadline and time.monotonic() > deadline:
                break
    finally:
        listener.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return received


# --- command line --------------------------------------------------------------------------


def key_values(pairs: list[str], what: str) -> dict[str, str]:
    values = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ClientError(f"{what} must be KEY=VALUE, got {pair!r}")
        values[key] = value
    return values


def _operations(specs: list[str]) -> dict[str, tuple[str, str]]:
    """`name=METHOD:/path` (or `name=/path`, GET)."""
    operations = {}
    for name, target in key_values(specs, "--operation").items():
        method, sep, path = target.partition(":")
        operations[name] = (method.upper(), path) if sep else ("GET", target)
    return operations


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, sort_keys=True))


def _pull(client: Orchestrator, args: argparse.Namespace) -> None:
    response = client.pull(orchestration_request(args.service, matchmaking=args.matchmaking,
                                                 operations=args.operation))
    if args.json:
        _print_json(response)
        return
    print(f"{len(response['results'])} result(s)")
    for result in response["results"]:
        print(describe_result(result))
    for warning in response.get("warnings", []):
        print(f"warning: {warning}")


def _subscribe(client: Orchestrator, args: argparse.Namespace) -> None:
    request = orchestration_request(args.service, matchmaking=args.matchmaking)

    def subscribe() -> None:
        subscription_id = client.subscribe(request, args.topic, trigger=args.trigger,
                                           duration=args.duration)
        print(f"subscribed {subscription_id} (topic {args.topic})", flush=True)

    def show(payload: dict[str, Any]) -> None:
        print(json.dumps(payload, sort_keys=True) if args.json
              else f"push: {len(payload.get('results', []))} result(s)", flush=True)
        if not args.json:
            for result in payload.get("results", []):
                print(describe_result(result), flush=True)

    if not args.listen:
        subscribe()
        return
    wait_for_pushes(args.mqtt, args.topic, show, ready=subscribe, max_pushes=args.max_pushes,
                    timeout=args.timeout)


def _unsubscribe(client: Orchestrator, args: argparse.Namespace) -> None:
    client.unsubscribe(args.id)
    print(f"unsubscribed {args.id}")


def _show_entries(args: argparse.Namespace, answer: dict[str, Any],
                  line: Callable[[dict[str, Any]], str], summary: str) -> None:
    """A `{entries, count}` answer: one line per entry and the count, or the JSON."""
    if args.json:
        _print_json(answer)
        return
    for entry in answer["entries"]:
        print(line(entry))
    print(f"{answer['count']} {summary}")


def _filters(**values: str | None) -> dict[str, list[str]]:
    return {name: [value] for name, value in values.items() if value}


def _show_removed(ids: list[str]) -> None:
    print(f"removed {len(ids)} id(s) (unknown ids are ignored)")


def _rule_line(entry: dict[str, Any]) -> str:
    return (f"{entry['id']}  {entry['consumer']}  {entry['serviceInstanceId']}  "
            f"priority={entry['priority']}")


def _instance_line(entry: dict[str, Any]) -> str:
    return (f"{entry['instanceId']}  expiresAt={entry.get('expiresAt')}  "
            f"metadata={json.dumps(entry.get('metadata') or {}, sort_keys=True)}")


def _rules_list(client: Orchestrator, args: argparse.Namespace) -> None:
    answer = client.rules_list(_filters(consumerNames=args.consumer,
                                        serviceDefinitions=args.service))
    _show_entries(args, answer, _rule_line, "rule(s)")


def _rules_create(client: Orchestrator, args: argparse.Namespace) -> None:
    answer = client.rules_create([{"consumer": args.consumer, "serviceInstanceId": args.instance,
                                   "priority": args.priority}])
    _show_entries(args, answer, _rule_line, "rule(s) created")


def _rules_remove(client: Orchestrator, args: argparse.Namespace) -> None:
    client.rules_remove(args.ids)
    _show_removed(args.ids)


def _instances_list(client: Orchestrator, args: argparse.Namespace) -> None:
    answer = client.instances_list(_filters(providerNames=args.provider,
                                            serviceDefinitionNames=args.service))
    _show_entries(args, answer, _instance_line, "instance(s)")


def _instances_register(client: Orchestrator, args: argparse.Namespace) -> None:
    answer = client.instances_register([http_instance(
        provider=args.provider, service=args.service, version=args.version,
        address=args.address, port=args.port, base_path=args.base_path, policy=args.policy,
        operations=_operations(args.operation), metadata=key_values(args.metadata, "--metadata"),
        expires_at=args.expires_at)])
    _show_entries(args, answer, _instance_line, "instance(s) registered")


def _instances_remove(client: Orchestrator, args: argparse.Namespace) -> None:
    client.instances_remove(args.ids)
    _show_removed(args.ids)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="sorch.py", description=__doc__.split("\n\n")[0])
    top.add_argument("--url", default=DEFAULT_URL, help=f"the service (default {DEFAULT_URL})")
    identity = top.add_mutually_exclusive_group()
    identity.add_argument("--system", help="declared identity: Bearer SYSTEM//<name>")
    identity.add_argument("--token", help="identity token: Bearer IDENTITY-TOKEN//<token>, "
                                          "written --token=TOKEN (it may begin with '-')")
    top.add_argument("--mqtt", default=DEFAULT_MQTT,
                     help=f"MQTT broker of the pushes (default {DEFAULT_MQTT})")
    top.add_argument("--json", action="store_true", help="print the service's answers as JSON")
    commands = top.add_subparsers(dest="command", required=True)

    pull = commands.add_parser("pull", help="ask which provider instances to use")
    pull.add_argument("--service", help="service definition")
    pull.add_argument("--operation", action="append", help="requested operation (repeatable)")
    pull.add_argument("--matchmaking", action="store_true", help="one result per service")
    pull.set_defaults(run=_pull)

    subscribe = commands.add_parser("subscribe", help="subscribe with MQTT notifications")
    subscribe.add_argument("--service", help="service definition")
    subscribe.add_argument("--topic", required=True, help="MQTT topic the pushes go to")
    subscribe.add_argument("--matchmaking", action="store_true")
    subscribe.add_argument("--trigger", action="store_true", help="push the current result now")
    subscribe.add_argument("--duration", type=int, help="seconds (default: until unsubscribed)")
    subscribe.add_argument("--listen", action="store_true",
                           help="stay connected to --mqtt and print every push (Ctrl-C stops; "
                                "the subscription stays)")
    subscribe.add_argument("--max-pushes", type=int, default=0,
                           help="with --listen: stop after this many pushes")
    subscribe.add_argument("--timeout", type=float, default=0,
                           help="with --listen: stop after this many seconds")
    subscribe.set_defaults(run=_subscribe)

    unsubscribe = commands.add_parser("unsubscribe", help="end a subscription")
    unsubscribe.add_argument("id")
    unsubscribe.set_defaults(run=_unsubscribe)

    rules = commands.add_parser("rules", help="orchestration rules (management)")
    rule_actions = rules.add_subparsers(dest="action", required=True)
    rules_list = rule_actions.add_parser("list")
    rules_list.add_argument("--consumer")
    rules_list.add_argument("--service")
    rules_list.set_defaults(run=_rules_list)
    rules_create = rule_actions.add_parser("create")
    rules_create.add_argument("--consumer", required=True)
    rules_create.add_argument("--instance", required=True,
                              help="service instance id provider|service|version")
    rules_create.add_argument("--priority", type=int, default=1)
    rules_create.set_defaults(run=_rules_create)
    rules_remove = rule_actions.add_parser("remove")
    rules_remove.add_argument("ids", nargs="+", metavar="id")
    rules_remove.set_defaults(run=_rules_remove)

    instances = commands.add_parser("instances", help="service instance catalog (management)")
    instance_actions = instances.add_subparsers(dest="action", required=True)
    instances_list = instance_actions.add_parser("list")
    instances_list.add_argument("--provider")
    instances_list.add_argument("--service")
    instances_list.set_defaults(run=_instances_list)
    register = instance_actions.add_parser("register",
                                           help="create or replace a generic_http instance")
    register.add_argument("--provider", required=True)
    register.add_argument("--service", required=True)
    register.add_argument("--version", default="1.0.0")
    register.add_argument("--address", default="127.0.0.1")
    register.add_argument("--port", type=int, required=True)
    register.add_argument("--base-path", default="/")
    register.add_argument("--policy", default="NONE", help="security policy, e.g. "
                          "TIME_LIMITED_TOKEN_AUTH")
    register.add_argument("--operation", action="append", default=[],
                          help="name=METHOD:/path (repeatable)")
    register.add_argument("--metadata", action="append", default=[], help="KEY=VALUE")
    register.add_argument("--expires-at", help="UTC instant, e.g. 2030-01-01T00:00:00Z")
    register.set_defaults(run=_instances_register)
    instances_remove = instance_actions.add_parser("remove")
    instances_remove.add_argument("ids", nargs="+", metavar="id")
    instances_remove.set_defaults(run=_instances_remove)
    return top


def exit_code(run: Callable[[], Any]) -> int:
    """Run a program's work: 0, or 1 after printing its ClientError as one line on stderr."""
    try:
        run()
    except ClientError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    client = Orchestrator(args.url, system=args.system, token=args.token)
    return exit_code(lambda: args.run(client, args))


if __name__ == "__main__":
    sys.exit(main())
