#!/usr/bin/env python3
"""An Arrowhead provider using the ServiceOrchestration system.

1. registers its service instance (one `generic_http` interface with a `query` operation) in
   the orchestrator's catalog; registering again replaces it (new metadata, expiry, ...);
2. `--verify=TOKEN`: asks the orchestrator whether an authorization token a consumer presented
   was issued for this provider, and prints the answer;
3. `--serve`: serves the `query` operation on `--address`:`--port`; under a token policy
   (`--policy TIME_LIMITED_TOKEN_AUTH`) every request must carry `Authorization: Bearer
   <token>` with a token the orchestrator verifies. On exit (Ctrl-C, SIGTERM) the instance is
   removed from the catalog.

    python docs/examples/provider.py --port 8080 --serve  # ExampleProvider, exampleTemperature

Registering is a management operation: the provider needs management permission. It uses the
client package: `pip install ./python-client`. See docs/examples/README.md.
"""
import argparse
import json
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from sorch import DEFAULT_URL, ClientError, Orchestrator, http_instance
from sorch.cli import exit_code, key_values

# The examples' own names: the README's quick start uses TemperatureProvider and temperatureInfo.
SYSTEM = "ExampleProvider"
SERVICE = "exampleTemperature"
OPEN_POLICIES = ("NONE", "CERT_AUTH")


def register(orchestrator: Orchestrator, args: argparse.Namespace) -> str:
    answer = orchestrator.instances_create([http_instance(
        provider=args.name or args.system, service=args.service, version=args.version,
        address=args.address, port=args.port, base_path=args.base_path, policy=args.policy,
        operations={"query": ("GET", "/query")},
        metadata=key_values(args.metadata, "--metadata"))])
    instance_id = answer["entries"][0]["instanceId"]
    print(f"registered {instance_id}", flush=True)
    return instance_id


def verify(orchestrator: Orchestrator, token: str) -> dict[str, Any]:
    answer = orchestrator.verify_token(token)
    if answer.get("verified"):
        print(f"token verified: consumer={answer['consumer']} service={answer['target']} "
              f"scope={answer['scope']} expiresAt={answer.get('expiresAt')}"
              + (f" usageLeft={answer['usageLeft']}" if "usageLeft" in answer else ""),
              flush=True)
    else:
        print("token not verified", flush=True)
    return answer


def serve(orchestrator: Orchestrator, args: argparse.Namespace) -> None:
    path = args.base_path.rstrip("/") + "/query"
    needs_token = args.policy.upper() not in OPEN_POLICIES

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] != path:
                return self._answer(404, {"error": f"no such operation: {self.path}"})
            consumer = None
            if needs_token:
                scheme, _, token = self.headers.get("Authorization", "").partition(" ")
                if scheme != "Bearer" or not token:
                    return self._answer(401, {"error": "authorization token missing"})
                try:
                    answer = verify(orchestrator, token.strip())
                except ClientError as error:  # the orchestrator cannot tell: refuse
                    print(f"error: {error}", file=sys.stderr, flush=True)
                    return self._answer(503, {"error": "token verification unavailable"})
                if not answer.get("verified"):
                    return self._answer(401, {"error": "invalid authorization token"})
                consumer = answer["consumer"]
            self._answer(200, {"temperature": 21.5, "unit": "celsius", "consumer": consumer})

        def _answer(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    try:
        server = ThreadingHTTPServer((args.address, args.port), Handler)
    except OSError as error:
        raise ClientError(f"cannot serve on {args.address}:{args.port}: "
                          f"{error.strerror or error}") from None
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    print(f"serving http://{args.address}:{args.port}{path}", flush=True)
    stop.wait()
    server.shutdown()
    server.server_close()


def run(args: argparse.Namespace) -> None:
    orchestrator = Orchestrator(args.url, system=args.system, token=args.token)
    instance_id = register(orchestrator, args) if not args.no_register else None
    if args.verify:
        verify(orchestrator, args.verify)
    if args.serve:
        try:
            serve(orchestrator, args)
        finally:
            if instance_id:
                orchestrator.instances_remove([instance_id])
                print(f"removed {instance_id}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=DEFAULT_URL)
    identity = parser.add_mutually_exclusive_group()
    identity.add_argument("--system", default=SYSTEM,
                          help="declared identity (Bearer SYSTEM//<name>); also the provider's "
                               f"name (default {SYSTEM})")
    identity.add_argument("--token", help="identity token (Bearer IDENTITY-TOKEN//<token>), "
                                          "written --token=TOKEN; "
                                          "give the provider's name with --name")
    parser.add_argument("--name", help="provider name when identified by --token")
    parser.add_argument("--service", default=SERVICE,
                        help=f"service definition provided (default {SERVICE})")
    parser.add_argument("--version", default="1.0.0")
    parser.add_argument("--address", default="127.0.0.1", help="address consumers call")
    parser.add_argument("--port", type=int, default=8080, help="port consumers call")
    parser.add_argument("--base-path", default="/temperature")
    parser.add_argument("--policy", default="TIME_LIMITED_TOKEN_AUTH",
                        help="security policy of the interface (NONE: no token)")
    parser.add_argument("--metadata", action="append", default=[], help="KEY=VALUE")
    parser.add_argument("--no-register", action="store_true", help="skip registering")
    parser.add_argument("--verify", metavar="TOKEN",
                        help="verify one token and print it; write --verify=TOKEN, as a token "
                             "may begin with '-'")
    parser.add_argument("--serve", action="store_true", help="serve the query operation")
    args = parser.parse_args()
    if args.token and not args.name and not args.no_register:
        parser.error("--token needs --name (the provider's system name)")
    return exit_code(lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
