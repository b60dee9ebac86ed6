"""A JSON object that keeps its own encoding (`EncodedJSON`), for a value written and sent
many times over: a fan-out's notification payloads were encoded once to be written by COPY
and once more to be published, for every subscriber (docs/performance.md)."""
import json
from collections.abc import Iterable
from typing import Any


class EncodedJSON(dict):
    """A dict and `text`, what `json.dumps` gives for it, encoded once. It is a dict to
    whatever does not know it; what does (database/bulk_insert.py, the MQTT publisher)
    takes `text` instead of encoding it again. Made by `encoded` or `encoded_object`; not
    to be changed afterwards, as `text` would not follow."""

    __slots__ = ("text",)


def encoded(value: dict) -> EncodedJSON:
    """`value` with its encoding."""
    result = EncodedJSON(value)
    result.text = json.dumps(result)
    return result


def encoded_object(members: Iterable[tuple[str, Any]]) -> EncodedJSON:
    """The object of `members` (name, value) in order, as `encoded` would give it; a value
    that is an EncodedJSON is not encoded again."""
    members = list(members)
    result = EncodedJSON(members)
    result.text = "{" + ", ".join(
        f"{json.dumps(name)}: {value.text if type(value) is EncodedJSON else json.dumps(value)}"
        for name, value in members) + "}"
    return result
