"""Record the flows the service goes through with the official Arrowhead 5 Java systems
(tests/recordings/<flow>.json; format in tests/interop/exchanges.py). Run by hand against
real systems on this machine, each started from a freshly created database, declared
identity policy, plain HTTP (docs/local-cloud.md, "Beside the official systems"):

    .venv/bin/python -m tests.interop.record --flow serviceregistry \
        --url http://127.0.0.1:8443 --how "…"
    .venv/bin/python -m tests.interop.record --flow consumerauthorization \
        --url http://127.0.0.1:8445 --how "…"
    .venv/bin/python -m tests.interop.record --flow blacklist --url http://127.0.0.1:8464 \
        --how "…"
    .venv/bin/python -m tests.interop.record --flow authentication \
        --url http://127.0.0.1:8444 --policy outsourced --how "…"

`--how` (how the systems were built and run) is kept in the recording.

The requests are the ones the service sends (its registration bodies come from
serviceregistry/published.py) and the ones that set up what those depend on (a provider's
registration, a grant, a Blacklist entry), as a Java system or operator sends them. Values
that differ from run to run are marked volatile by their names (VOLATILE_NAMES).
"""
import argparse
import datetime as dt
import json
import os
import sys
from typing import Any

from tests.interop.exchanges import RECORDINGS, resolved, send

VOLATILE_NAMES = {"createdAt", "updatedAt", "expiresAt", "token", "tokenReference",
                  "expirationTime", "loginTime"}
US = "SimpleStoreServiceOrchestration"
PROVIDER, CONSUMER, OTHER = "InteropProvider", "InteropConsumer", "InteropOther"
INSTANCE = f"{PROVIDER}|interopService|1.0.0"
PASSWORD = "interop-123"  # of US and CONSUMER in the recorded Authentication system


def declared(name: str | None) -> str | None:
    return None if name is None else f"Bearer SYSTEM//{name}"


def step(note: str, method: str, path: str, caller: str | None, body: Any = None) -> dict:
    return {"note": note, "method": method, "path": path, "authorization": declared(caller),
            "body": body}


def _interface(port: int, **properties: Any) -> dict[str, Any]:
    return {"templateName": "generic_http", "protocol": "http", "policy": "NONE",
            "properties": {"accessAddresses": ["127.0.0.1"], "accessPort": port,
                           "basePath": "/interop",
                           "operations": {"query": {"method": "GET", "path": "/query"}},
                           **properties}}


def serviceregistry_flow() -> list[dict]:
    from serviceregistry.published import service_register_bodies, system_register_body
    base, lookup = "/serviceregistry", "/serviceregistry/service-discovery/lookup"
    system = {"metadata": {"site": "interop"}, "version": "1.0.0", "addresses": ["127.0.0.1"]}
    service = {"serviceDefinitionName": "interopService", "version": "1.0.0",
               "metadata": {"unit": "interop"}, "interfaces": [_interface(9001)]}
    ours = service_register_bodies()
    steps = [
        step("our system", "POST", f"{base}/system-discovery/register", US,
             system_register_body()),
        *(step(f"our service {body['serviceDefinitionName']}", "POST",
               f"{base}/service-discovery/register", US, body) for body in ours),
        step("our services", "POST", f"{lookup}?verbose=false", US, {"providerNames": [US]}),
        step("a provider", "POST", f"{base}/system-discovery/register", PROVIDER, system),
        step("the same again", "POST", f"{base}/system-discovery/register", PROVIDER, system),
        step("a system looked up by name (the flexible store's consumer metadata)", "POST",
             f"{base}/system-discovery/lookup?verbose=false", US, {"systemNames": [PROVIDER]}),
        step("an unknown system looked up", "POST",
             f"{base}/system-discovery/lookup?verbose=false", US,
             {"systemNames": ["InteropNobody"]}),
        step("the same name, other metadata", "POST", f"{base}/system-discovery/register",
             PROVIDER, {**system, "metadata": {"site": "elsewhere"}}),
        step("its service", "POST", f"{base}/service-discovery/register", PROVIDER, service),
        step("an unknown interface template", "POST", f"{base}/service-discovery/register",
             PROVIDER, {**service, "interfaces": [{**_interface(9001),
                                                  "templateName": "interop_template"}]}),
        step("a mandatory property missing", "POST", f"{base}/service-discovery/register",
             PROVIDER, {**service, "interfaces": [{
                 **_interface(9001), "properties": {"accessAddresses": ["127.0.0.1"],
                                                    "basePath": "/interop"}}]}),
        step("by definition", "POST", f"{lookup}?verbose=false", US,
             {"serviceDefinitionNames": ["interopService"]}),
        step("by instance id", "POST", f"{lookup}?verbose=false", US,
             {"instanceIds": [INSTANCE]}),
        step("by provider only", "POST", f"{lookup}?verbose=false", US,
             {"providerNames": [PROVIDER]}),
        step("without a query string", "POST", lookup, US,
             {"serviceDefinitionNames": ["interopService"]}),
        step("no filter", "POST", f"{lookup}?verbose=false", US, {}),
        step("another system: restricted discovery", "POST", f"{lookup}?verbose=false",
             CONSUMER, {"serviceDefinitionNames": ["interopService"]}),
        step("no identity", "POST", f"{lookup}?verbose=false", None,
             {"serviceDefinitionNames": ["interopService"]}),
        step("another system revokes it", "DELETE",
             f"{base}/service-discovery/revoke/{INSTANCE.replace('|', '%7C')}", CONSUMER),
        step("its provider revokes it", "DELETE",
             f"{base}/service-discovery/revoke/{INSTANCE.replace('|', '%7C')}", PROVIDER),
        step("again", "DELETE",
             f"{base}/service-discovery/revoke/{INSTANCE.replace('|', '%7C')}", PROVIDER),
        step("gone", "POST", f"{lookup}?verbose=false", US, {"instanceIds": [INSTANCE]}),
        step("the provider leaves", "DELETE", f"{base}/system-discovery/revoke", PROVIDER),
        step("again", "DELETE", f"{base}/system-discovery/revoke", PROVIDER),
        *(step(f"our service {body['serviceDefinitionName']} revoked", "DELETE",
               f"{base}/service-discovery/revoke/"
               f"{US}%7C{body['serviceDefinitionName']}%7C{body['version']}", US)
          for body in ours),
        step("we leave", "DELETE", f"{base}/system-discovery/revoke", US),
    ]
    return steps


def consumerauthorization_flow() -> list[dict]:
    from orchestration.tokens.ca_tokens import generation_request
    from orchestration.tokens.services import TokenGrant
    base = "/consumerauthorization"
    ask = {"provider": US, "consumer": CONSUMER, "cloud": "LOCAL", "targetType": "SERVICE_DEF",
           "target": "serviceOrchestrationSimpleStoreManagement", "scope": "query"}
    token = generation_request(TokenGrant("TIME_LIMITED_TOKEN_AUTH", CONSUMER, PROVIDER,
                                          "interopService", "query"))
    return [
        step("our management asked about, nothing granted", "POST",
             f"{base}/authorization/verify", US, ask),
        step("we grant a consumer our management", "POST", f"{base}/authorization/grant", US,
             {"cloud": "LOCAL", "targetType": "SERVICE_DEF",
              "target": "serviceOrchestrationSimpleStoreManagement", "description": "interop",
              "defaultPolicy": {"policyType": "WHITELIST", "policyList": [CONSUMER]}}),
        step("asked again", "POST", f"{base}/authorization/verify", US, ask),
        step("another system asked about", "POST", f"{base}/authorization/verify", US,
             {**ask, "consumer": OTHER}),
        step("a question that is not ours", "POST", f"{base}/authorization/verify", US,
             {**ask, "provider": PROVIDER}),
        step("a provider grants a consumer its service", "POST",
             f"{base}/authorization/grant", PROVIDER,
             {"cloud": "LOCAL", "targetType": "SERVICE_DEF", "target": "interopService",
              "description": "interop",
              "defaultPolicy": {"policyType": "WHITELIST", "policyList": [CONSUMER]}}),
        step("we ask for the consumer's token", "POST",
             f"{base}/authorization/mgmt/token/generate?unbound=true", US, {"list": [token]}),
        step("for one that is not granted", "POST",
             f"{base}/authorization/mgmt/token/generate?unbound=true", US,
             {"list": [{**token, "consumer": OTHER}]}),
        step("the provider verifies the token", "GET",
             f"{base}/authorization-token/token/verify/{{{{7/entries/0/token}}}}", PROVIDER),
        step("another system verifies it", "GET",
             f"{base}/authorization-token/token/verify/{{{{7/entries/0/token}}}}", OTHER),
        step("the flexible store checks consumers' policies (granted, not granted, a scope)",
             "POST", f"{base}/authorization/mgmt/check", US, {"list": [
                 {"provider": PROVIDER, "consumer": CONSUMER, "targetType": "SERVICE_DEF",
                  "target": "interopService"},
                 {"provider": PROVIDER, "consumer": OTHER, "targetType": "SERVICE_DEF",
                  "target": "interopService"},
                 {"provider": PROVIDER, "consumer": CONSUMER, "targetType": "SERVICE_DEF",
                  "target": "interopService", "scope": "query"}]}),
        step("an empty check", "POST", f"{base}/authorization/mgmt/check", US, {"list": []}),
    ]


def blacklist_flow() -> list[dict]:
    base = "/blacklist"
    # An entry that expires, in the future whenever replayed, and within what the Java
    # Blacklist can store (its MySQL TIMESTAMP column ends in 2038: 2100 answered 500).
    later = "2037-12-31T00:00:00Z"
    return [
        step("nobody listed", "GET", f"{base}/check/{CONSUMER}", US),
        step("an operator lists a consumer", "POST", f"{base}/mgmt/create", "Sysop",
             {"entities": [{"systemName": CONSUMER, "expiresAt": later, "reason": "interop"},
                           {"systemName": OTHER, "reason": "interop"}]}),
        step("listed", "GET", f"{base}/check/{CONSUMER}", US),
        step("not listed", "GET", f"{base}/check/{PROVIDER}", US),
        step("our query of the active entries", "POST", f"{base}/mgmt/query", US,
             {"pagination": {"page": 0, "size": 100}, "mode": "ACTIVES"}),
        step("the operator removes them", "DELETE",
             f"{base}/mgmt/remove?names={CONSUMER}&names={OTHER}", "Sysop"),
        step("not listed any more", "GET", f"{base}/check/{CONSUMER}", US),
        step("all entries", "POST", f"{base}/mgmt/query", US,
             {"pagination": {"page": 0, "size": 100}, "mode": "ALL"}),
    ]


def authentication_flow() -> list[dict]:
    """Needs the identities of US and CONSUMER with PASSWORD, made by the operator first
    (`POST /authentication/mgmt/identities`); the login is the one the service makes
    (clients/authentication.py), the verification the one of the outsourced policy."""
    base = "/authentication/identity"

    def login(name: str, password: str | None) -> dict:
        return {"systemName": name, "credentials": {} if password is None
                else {"password": password}}

    ours = "Bearer IDENTITY-TOKEN//{{1/token}}"
    return [
        step("we log in", "POST", f"{base}/login", None, login(US, PASSWORD)),
        step("a consumer logs in", "POST", f"{base}/login", None, login(CONSUMER, PASSWORD)),
        {**step("we verify its token", "GET", f"{base}/verify/{{{{2/token}}}}", None),
         "authorization": ours},
        {**step("an unknown token", "GET", f"{base}/verify/interop-unknown-token", None),
         "authorization": ours},
        step("verifying without our token", "GET", f"{base}/verify/{{{{2/token}}}}", None),
        {**step("verifying with a token that is not one", "GET",
                f"{base}/verify/{{{{2/token}}}}", None),
         "authorization": "Bearer IDENTITY-TOKEN//interop-unknown-token"},
        step("a wrong password", "POST", f"{base}/login", None, login(CONSUMER, "wrong")),
        step("no password", "POST", f"{base}/login", None, login(CONSUMER, None)),
        step("an unknown system", "POST", f"{base}/login", None,
             login("InteropNobody", PASSWORD)),
    ]


FLOWS = {"authentication": ("Authentication", authentication_flow),
         "serviceregistry": ("ServiceRegistry", serviceregistry_flow),
         "consumerauthorization": ("ConsumerAuthorization", consumerauthorization_flow),
         "blacklist": ("Blacklist", blacklist_flow)}


def volatile_pointers(value: Any, prefix: str = "") -> list[str]:
    """The pointers of VOLATILE_NAMES's values in `value` (list indices as `*`)."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key in VOLATILE_NAMES and item is not None:
                found.append(f"{prefix}/{key}")
            else:
                found += volatile_pointers(item, f"{prefix}/{key}")
    elif isinstance(value, list):
        for item in value:
            found += volatile_pointers(item, f"{prefix}/*")
    return sorted(set(found))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flow", choices=sorted(FLOWS), required=True)
    parser.add_argument("--url", required=True, help="the real system, e.g. http://127.0.0.1:8443")
    parser.add_argument("--version", default="5.2.0", help="the Java system's version")
    parser.add_argument("--how", required=True,
                        help="how the system was built and run (kept in the recording)")
    parser.add_argument("--policy", default="declared", help="the cloud's identity policy")
    arguments = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django
    django.setup()
    system, flow = FLOWS[arguments.flow]
    exchanges, answers = [], []
    for request in flow():
        status, answer = send(arguments.url, request["method"],
                              resolved(request["path"], answers),
                              resolved(request["authorization"], answers),
                              resolved(request["body"], answers))
        answers.append(answer)
        print(f"{status} {request['method']} {request['path']}  ({request['note']})",
              file=sys.stderr)
        exchanges.append({"note": request["note"],
                          "request": {key: request[key] for key in
                                      ("method", "path", "authorization", "body")},
                          "response": {"status": status, "body": answer},
                          "volatile": volatile_pointers(answer)})
    path = RECORDINGS / f"{arguments.flow}.json"
    RECORDINGS.mkdir(exist_ok=True)
    path.write_text(json.dumps({
        "system": system, "version": arguments.version, "policy": arguments.policy,
        "recorded": dt.date.today().isoformat(), "how": arguments.how,
        "exchanges": exchanges}, indent=1) + "\n")
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
