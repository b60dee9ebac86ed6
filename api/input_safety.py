"""What no request may carry into the service, wherever it appears (docs/errors.md, "Input no
request may carry"): NUL (PostgreSQL cannot store it), unpaired surrogates (neither the
database nor UTF-8 can hold them) and non-finite numbers (nor JSONB). The JSON parser checks
every parsed body with `json_problem`, the request guard the URL and headers with
`text_problem`: the only two places, so no field needs its own check.
"""
import json
import math
import re
from typing import Any

NUL_MESSAGE = "NUL characters (U+0000) are not allowed."
SURROGATE_MESSAGE = "Unpaired surrogates (U+D800 to U+DFFF) are not allowed."
NUMBER_MESSAGE = "Number out of range."

_FORBIDDEN = re.compile("[\x00\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
# How refused values look once re-encoded by json.dumps(ensure_ascii=False): NUL escaped,
# surrogates as they are (_SURROGATE), non-finite numbers as JavaScript literals.
_SUSPECT_TEXTS = ("\\u0000", "Infinity", "NaN")
_REPLACEMENT = "\ufffd"


def text_problem(text: str) -> str | None:
    """Why `text` cannot be accepted, or None."""
    found = _FORBIDDEN.search(text)
    if found is None:
        return None
    return NUL_MESSAGE if found.group() == "\x00" else SURROGATE_MESSAGE


def encodable(text: str) -> str:
    """`text` with every unpaired surrogate replaced by U+FFFD, so that it encodes as UTF-8
    (the only characters of a Python str that cannot)."""
    return _SURROGATE.sub(_REPLACEMENT, text)


# A path node is (parent node, key or index); the root is None. Paths are built only for the
# one value that is refused, so walking a large body stays linear.
_PathNode = tuple[Any, str | int] | None


def json_problem(document: Any, path: str = "") -> str | None:
    """The first refused value of a parsed JSON document as `path: reason`, the path written as
    in validation messages (`notifyInterface.properties.topic`, `entries[0].consumer`), or None.
    `path`: where the document is, for a part of a larger one (`entries[3]`).

    Iterative, so any nesting the decoder accepted is walked without recursion."""
    if not _may_hold_problem(document):
        return None
    pending: list[tuple[Any, _PathNode]] = [(document, (None, path) if path else None)]
    while pending:
        value, node = pending.pop()
        problem = None
        if isinstance(value, str):
            problem = text_problem(value)
        elif isinstance(value, float) and not math.isfinite(value):
            problem = NUMBER_MESSAGE
        elif isinstance(value, dict):
            problem = next((f"Field name: {p}" for p in map(text_problem, value) if p), None)
            # Children go onto the stack reversed, so that the first refused value in
            # document order is the one reported.
            pending.extend((item, (node, key)) for key, item in reversed(value.items()))
        elif isinstance(value, list):
            pending.extend((value[i], (node, i)) for i in range(len(value) - 1, -1, -1))
        if problem is not None:
            return _located(node, problem)
    return None


def _may_hold_problem(document: Any) -> bool:
    """A screen at C speed (the walk alone costs ten times the parse of a large body): never
    misses a refused value, may raise a false alarm (text merely looking like one), which the
    walk then clears."""
    try:
        text = json.dumps(document, ensure_ascii=False)
    except (RecursionError, ValueError, TypeError):
        return True
    return any(suspect in text for suspect in _SUSPECT_TEXTS) or bool(_SURROGATE.search(text))


def _located(node: _PathNode, message: str) -> str:
    parts: list[str] = []
    while node is not None:
        node, key = node
        parts.append(f"[{key}]" if isinstance(key, int) else f".{key}")
    path = "".join(reversed(parts)).removeprefix(".")
    return f"{path}: {message}" if path else message
