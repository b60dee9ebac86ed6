"""Recorded exchanges with the official Arrowhead 5 Java systems (tests/recordings/*.json) and
what holds a stand-in (tests/fake_*.py) to them (issue 32, docs/interop.md).

A recording is one flow against one real system, from its freshly created database on:

    {"system": "ServiceRegistry", "version": "5.2.0", "policy": "declared",
     "recorded": "2026-11-28", "how": "…",
     "exchanges": [{"note": "…",
                    "request": {"method": "POST", "path": "/serviceregistry/…?verbose=false",
                                "authorization": "Bearer SYSTEM//…" or null, "body": … or null},
                    "response": {"status": 201, "body": …},
                    "volatile": ["/createdAt", "/entries/*/updatedAt"]}]}

`volatile` lists JSON pointers (`*`: any list index or key) of values that differ from run to
run (instants, tokens, generated ids): present in both answers, their values not compared. A
request may use a value of an earlier answer of the same run (a token it was given):
`{{N/pointer}}` in its path, its Authorization header or a string of its body is the value at
`pointer` of answer N
(counted from 1), resolved as each request is sent, to the real system when recording and to
the stand-in when replaying.
Replaying a recording sends its requests, in order, to a fresh stand-in over real HTTP; every
answer must equal the recorded one, volatile values aside. Java leaves null fields out of its
JSON, so a stand-in that sends `"expiresAt": null` does not match.
"""
import json
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RECORDINGS = Path(__file__).resolve().parent.parent / "recordings"
VOLATILE = "<volatile>"


@dataclass(frozen=True)
class Exchange:
    note: str
    method: str
    path: str
    authorization: str | None
    body: Any
    status: int
    answer: Any
    volatile: tuple[str, ...]


@dataclass(frozen=True)
class Recording:
    name: str
    system: str
    version: str
    exchanges: tuple[Exchange, ...]


def recordings() -> list[Path]:
    return sorted(RECORDINGS.glob("*.json"))


def recording(path: Path) -> Recording:
    data = json.loads(path.read_text())
    return Recording(path.stem, data["system"], data["version"], tuple(
        Exchange(entry.get("note", ""), entry["request"]["method"], entry["request"]["path"],
                 entry["request"].get("authorization"), entry["request"].get("body"),
                 entry["response"]["status"], entry["response"].get("body"),
                 tuple(entry.get("volatile", ())))
        for entry in data["exchanges"]))


def masked(value: Any, pointers: tuple[str, ...]) -> Any:
    """`value` with the values at `pointers` replaced by VOLATILE (where present)."""
    value = json.loads(json.dumps(value))
    for pointer in pointers:
        _mask(value, [part for part in pointer.split("/")[1:]])
    return value


def _mask(node: Any, parts: list[str]) -> None:
    if not parts:
        return
    head, rest = parts[0], parts[1:]
    if isinstance(node, dict):
        keys = list(node) if head == "*" else [head] if head in node else []
    elif isinstance(node, list):
        keys = range(len(node)) if head == "*" else \
            [int(head)] if head.isdigit() and int(head) < len(node) else []
    else:
        return
    for key in keys:
        if rest:
            _mask(node[key], rest)
        elif node[key] is not None:
            node[key] = VOLATILE


_EARLIER = re.compile(r"\{\{(\d+)(/[^}]*)\}\}")


def resolved(template: Any, answers: list[Any]) -> Any:
    """`template` (a path or a body) with each `{{N/pointer}}` replaced by that value of
    `answers` (the run's answers so far)."""
    if isinstance(template, dict):
        return {key: resolved(value, answers) for key, value in template.items()}
    if isinstance(template, list):
        return [resolved(value, answers) for value in template]
    if not isinstance(template, str):
        return template

    def value(match: re.Match) -> str:
        node = answers[int(match.group(1)) - 1]
        for part in match.group(2).split("/")[1:]:
            node = node[int(part)] if isinstance(node, list) else node[part]
        return str(node)

    return _EARLIER.sub(value, template)


def send(base_url: str, method: str, path: str, authorization: str | None,
         body: Any) -> tuple[int, Any]:
    """One request to `base_url` as the Java clients send it; the status and parsed body."""
    headers = {"Accept": "application/json", "Content-Type": "application/json"}
    if authorization:
        headers["Authorization"] = authorization
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base_url + path, data=data, method=method,
                                     headers=headers)
    try:
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
                request, timeout=30) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, raw = error.code, error.read()
    try:
        return status, json.loads(raw) if raw.strip() else None
    except ValueError:
        return status, raw.decode(errors="replace")


def differences(base_url: str, recorded: Recording) -> list[str]:
    """Replay `recorded` against the stand-in at `base_url`: one line per answer that differs
    (status, or body with the volatile values masked on both sides)."""
    found, answers = [], []
    for number, exchange in enumerate(recorded.exchanges, start=1):
        status, answer = send(base_url, exchange.method, resolved(exchange.path, answers),
                              resolved(exchange.authorization, answers),
                              resolved(exchange.body, answers))
        answers.append(answer)
        expected = masked(exchange.answer, exchange.volatile)
        got = masked(answer, exchange.volatile)
        if (status, got) != (exchange.status, expected):
            found.append(f"{recorded.name} #{number} {exchange.method} {exchange.path} "
                         f"({exchange.note}): recorded {exchange.status} "
                         f"{json.dumps(expected, sort_keys=True)}, stand-in {status} "
                         f"{json.dumps(got, sort_keys=True)}")
    return found
