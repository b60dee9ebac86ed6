#!/usr/bin/env python3
"""An Arrowhead consumer of the ServiceOrchestration system.

1. pulls: which provider instances should it use for a service? (prints each result);
2. optionally calls the first result's operation over HTTP, presenting the authorization
   token pull issued for it (`--call <operation>`);
3. subscribes with an MQTT notify interface and prints every result the service pushes when
   the rules or the instances behind them change;
4. after a lost connection to the broker, connects and pulls again (so that a change pushed
   meanwhile is not missed) and prints that result as it prints a push;
5. unsubscribes on exit (Ctrl-C, SIGTERM, `--max-pushes` or `--timeout`).

    python docs/examples/consumer.py            # as ExampleConsumer, for exampleTemperature

It uses the client package: `pip install ./python-client`. See docs/examples/README.md.
"""
import argparse
import sys
import urllib.error
import urllib.request
import uuid
from typing import Any

from sorch import (
    DEFAULT_MQTT,
    DEFAULT_URL,
    ClientError,
    Orchestrator,
    describe_result,
    orchestration_request,
    wait_for_pushes,
)
from sorch.cli import exit_code

# The examples' own names: the README's quick start uses TemperatureConsumer and temperatureInfo.
SYSTEM = "ExampleConsumer"
SERVICE = "exampleTemperature"


def call_provider(result: dict[str, Any], operation: str) -> str:
    """Call `operation` of the result's first HTTP interface with its token, if any."""
    for interface in result.get("interfaces", []):
        properties = interface.get("properties", {})
        target = (properties.get("operations") or {}).get(operation)
        if interface.get("templateName") not in ("generic_http", "generic_https") or not target:
            continue
        scheme = "https" if interface["templateName"] == "generic_https" else "http"
        url = (f"{scheme}://{properties['accessAddresses'][0]}:{properties['accessPort']}"
               f"{properties['basePath'].rstrip('/')}{target['path']}")
        headers = {}
        token = (result.get("authorizationTokens") or {}).get(interface["policy"], {})
        if operation in token:
            headers["Authorization"] = f"Bearer {token[operation]['token']}"
        request = urllib.request.Request(url, headers=headers, method=target["method"])
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return f"{response.status} {response.read().decode()}"
        except urllib.error.HTTPError as error:
            return f"{error.code} {error.read().decode()}"
        except (urllib.error.URLError, OSError) as error:
            raise ClientError(f"cannot reach the provider at {url}: "
                              f"{getattr(error, 'reason', error)}") from None
    raise ClientError(f"{result['serviceInstanceId']} has no HTTP interface offering "
                      f"{operation}")


def run(args: argparse.Namespace) -> None:
    orchestrator = Orchestrator(args.url, system=args.system, token=args.token)
    request = orchestration_request(args.service, matchmaking=True,
                                    operations=[args.call] if args.call else None)

    response = orchestrator.pull(request)
    print(f"pull: {len(response['results'])} result(s)", flush=True)
    for result in response["results"]:
        print(f"  {describe_result(result)}", flush=True)
    if args.call and response["results"]:
        print(f"call {args.call}: {call_provider(response['results'][0], args.call)}",
              flush=True)

    subscription: list[str] = []
    topic = args.topic or f"arrowhead/examples/consumer/{uuid.uuid4().hex}"

    def subscribe() -> None:
        # Subscribed to the topic first, so that no push is lost.
        subscription.append(orchestrator.subscribe(request, topic))
        print(f"subscribed {subscription[0]} (topic {topic})", flush=True)

    def show(payload: dict[str, Any]) -> None:
        print(f"push: {len(payload.get('results', []))} result(s)", flush=True)
        for result in payload.get("results", []):
            print(f"  {describe_result(result)}", flush=True)

    try:
        wait_for_pushes(args.mqtt, topic, show, ready=subscribe,
                        repull=lambda: orchestrator.pull(request), max_pushes=args.max_pushes,
                        timeout=args.timeout)
    finally:
        if subscription:
            orchestrator.unsubscribe(subscription[0])
            print(f"unsubscribed {subscription[0]}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=DEFAULT_URL)
    identity = parser.add_mutually_exclusive_group()
    identity.add_argument("--system", default=SYSTEM,
                          help=f"declared identity (Bearer SYSTEM//<name>; default {SYSTEM})")
    identity.add_argument("--token", help="identity token (Bearer IDENTITY-TOKEN//<token>), "
                                          "written --token=TOKEN (it may begin with '-')")
    parser.add_argument("--mqtt", default=DEFAULT_MQTT, help="broker of the pushes")
    parser.add_argument("--service", default=SERVICE,
                        help=f"service definition to consume (default {SERVICE})")
    parser.add_argument("--topic", help="MQTT topic of the pushes (default: a fresh one)")
    parser.add_argument("--call", metavar="OPERATION",
                        help="call this operation of the first result, with its token")
    parser.add_argument("--max-pushes", type=int, default=0, help="stop after this many")
    parser.add_argument("--timeout", type=float, default=0, help="stop after this many seconds")
    args = parser.parse_args()
    return exit_code(lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
