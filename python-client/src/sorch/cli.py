"""sorch: the command line of the ServiceOrchestration core system's client.

    sorch --system Sysop rules list
    sorch --system ExampleConsumer pull --service exampleTemperature

Every failure (an error answer of the service, an unreachable service or broker) is printed as
one line on stderr and ends the command with exit code 1.
"""
import argparse
import json
import logging
import sys
from collections.abc import Callable
from typing import Any

from sorch.bodies import http_instance, orchestration_request
from sorch.describe import describe_result
from sorch.errors import ClientError
from sorch.listener import DEFAULT_MQTT, wait_for_pushes
from sorch.orchestrator import DEFAULT_URL, Orchestrator
from sorch.version import __version__

Command = Callable[[Orchestrator, argparse.Namespace], None]


def key_values(pairs: list[str], what: str) -> dict[str, str]:
    """`KEY=VALUE` arguments as a dict; `what` names the option in the error."""
    values = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ClientError(f"{what} must be KEY=VALUE, got {pair!r}")
        values[key] = value
    return values


def exit_code(run: Callable[[], Any]) -> int:
    """Run a program's work: 0, or 1 after printing its ClientError as one line on stderr."""
    try:
        run()
    except ClientError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def _operations(specs: list[str]) -> dict[str, tuple[str, str]]:
    """`name=METHOD:/path` (or `name=/path`, GET)."""
    operations = {}
    for name, target in key_values(specs, "--operation").items():
        method, sep, path = target.partition(":")
        operations[name] = (method.upper(), path) if sep else ("GET", target)
    return operations


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, sort_keys=True))


def _print_response(args: argparse.Namespace, response: dict[str, Any], what: str) -> None:
    if args.json:
        print(json.dumps(response, sort_keys=True), flush=True)
        return
    print(f"{what}{len(response.get('results', []))} result(s)", flush=True)
    for result in response.get("results", []):
        print(describe_result(result), flush=True)
    for warning in response.get("warnings", []):
        print(f"warning: {warning}", flush=True)


def _pull(client: Orchestrator, args: argparse.Namespace) -> None:
    response = client.pull(orchestration_request(args.service, matchmaking=args.matchmaking,
                                                 operations=args.operation))
    if args.json:
        _print_json(response)
        return
    _print_response(args, response, "")


def _subscribe(client: Orchestrator, args: argparse.Namespace) -> None:
    request = orchestration_request(args.service, matchmaking=args.matchmaking)

    def subscribe() -> None:
        subscription_id = client.subscribe(request, args.topic, trigger=args.trigger,
                                           duration=args.duration)
        print(f"subscribed {subscription_id} (topic {args.topic})", flush=True)

    if not args.listen:
        subscribe()
        return
    wait_for_pushes(args.mqtt, args.topic, lambda push: _print_response(args, push, "push: "),
                    ready=subscribe, repull=lambda: client.pull(request),
                    max_pushes=args.max_pushes, timeout=args.timeout)


def _unsubscribe(client: Orchestrator, args: argparse.Namespace) -> None:
    removed = client.unsubscribe(args.id)
    print(f"unsubscribed {args.id}" if removed else f"no subscription {args.id}")


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
    answer = client.rules_query(_filters(consumerNames=args.consumer,
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
    answer = client.instances_query(_filters(providerNames=args.provider,
                                             serviceDefinitionNames=args.service))
    _show_entries(args, answer, _instance_line, "instance(s)")


def _instances_register(client: Orchestrator, args: argparse.Namespace) -> None:
    answer = client.instances_create([http_instance(
        provider=args.provider, service=args.service, version=args.version,
        address=args.address, port=args.port, base_path=args.base_path, policy=args.policy,
        operations=_operations(args.operation), metadata=key_values(args.metadata, "--metadata"),
        expires_at=args.expires_at)])
    _show_entries(args, answer, _instance_line, "instance(s) registered")


def _instances_remove(client: Orchestrator, args: argparse.Namespace) -> None:
    client.instances_remove(args.ids)
    _show_removed(args.ids)


def _command(commands: Any, name: str, run: Command, **options: Any) -> argparse.ArgumentParser:
    command: argparse.ArgumentParser = commands.add_parser(name, **options)
    command.set_defaults(run=run)
    return command


def _consumer_commands(commands: Any) -> None:
    pull = _command(commands, "pull", _pull, help="ask which provider instances to use")
    pull.add_argument("--service", help="service definition")
    pull.add_argument("--operation", action="append", help="requested operation (repeatable)")
    pull.add_argument("--matchmaking", action="store_true", help="one result per service")

    subscribe = _command(commands, "subscribe", _subscribe,
                         help="subscribe with MQTT notifications")
    subscribe.add_argument("--service", help="service definition")
    subscribe.add_argument("--topic", required=True, help="MQTT topic the pushes go to")
    subscribe.add_argument("--matchmaking", action="store_true")
    subscribe.add_argument("--trigger", action="store_true", help="push the current result now")
    subscribe.add_argument("--duration", type=int, help="seconds (default: until unsubscribed)")
    subscribe.add_argument("--listen", action="store_true",
                           help="stay connected to --mqtt and print every push, connecting "
                                "and pulling again after a lost connection (Ctrl-C stops; "
                                "the subscription stays)")
    subscribe.add_argument("--max-pushes", type=int, default=0,
                           help="with --listen: stop after this many results")
    subscribe.add_argument("--timeout", type=float, default=0,
                           help="with --listen: stop after this many seconds")

    unsubscribe = _command(commands, "unsubscribe", _unsubscribe, help="end a subscription")
    unsubscribe.add_argument("id")


def _management(commands: Any, name: str, what: str, listing: Command,
                filters: tuple[str, ...], removal: Command) -> Any:
    """`<name> list [filters]`, `<name> remove ID...`; the group, for its other commands."""
    actions = commands.add_parser(name, help=f"{what} (management)").add_subparsers(
        dest="action", required=True)
    lister = _command(actions, "list", listing)
    for option in filters:
        lister.add_argument(option)
    _command(actions, "remove", removal).add_argument("ids", nargs="+", metavar="id")
    return actions


def _rule_commands(commands: Any) -> None:
    actions = _management(commands, "rules", "orchestration rules", _rules_list,
                          ("--consumer", "--service"), _rules_remove)
    rules_create = _command(actions, "create", _rules_create)
    rules_create.add_argument("--consumer", required=True)
    rules_create.add_argument("--instance", required=True,
                              help="service instance id provider|service|version")
    rules_create.add_argument("--priority", type=int, default=1)


def _instance_commands(commands: Any) -> None:
    actions = _management(commands, "instances", "service instance catalog", _instances_list,
                          ("--provider", "--service"), _instances_remove)
    register = _command(actions, "register", _instances_register,
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


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="sorch", description=(__doc__ or "").split("\n\n")[0])
    top.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    top.add_argument("--url", default=DEFAULT_URL, help=f"the service (default {DEFAULT_URL})")
    identity = top.add_mutually_exclusive_group()
    identity.add_argument("--system", help="declared identity: Bearer SYSTEM//<name>")
    identity.add_argument("--token", help="identity token: Bearer IDENTITY-TOKEN//<token>, "
                                          "written --token=TOKEN (it may begin with '-')")
    top.add_argument("--mqtt", default=DEFAULT_MQTT,
                     help=f"MQTT broker of the pushes (default {DEFAULT_MQTT})")
    top.add_argument("--json", action="store_true", help="print the service's answers as JSON")
    commands = top.add_subparsers(dest="command", required=True)
    _consumer_commands(commands)
    _rule_commands(commands)
    _instance_commands(commands)
    return top


def show_connection_news() -> None:
    """The listener's news (a lost connection, connected again) as lines on stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("sorch")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    show_connection_news()
    client = Orchestrator(args.url, system=args.system, token=args.token)
    return exit_code(lambda: args.run(client, args))
