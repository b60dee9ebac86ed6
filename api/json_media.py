"""JSON in and JSON out: the only request parser and the only response renderer, DRF's JSON
ones made unable to fail where the service must answer.

The parser answers nesting too deep for Python's decoder as a parse error (400) instead of an
unhandled RecursionError (500), and checks every parsed body for what the service cannot
store or echo (api.input_safety), so that no field needs its own check.

The renderer cannot fail on text it cannot encode. Unpaired surrogates are the only
characters of a Python str that UTF-8 cannot hold; the parser refuses them in requests, and
should one still reach a response (a message echoing input, data from elsewhere) it is
replaced by U+FFFD instead of turning the answer into a 500."""
from typing import Any

from rest_framework import parsers, renderers
from rest_framework.exceptions import ParseError

from api.input_safety import encodable, json_problem
from conventions.exceptions import InvalidParameter


class JSONParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            document = super().parse(stream, media_type, parser_context)
        except RecursionError as exc:
            raise ParseError("JSON parse error - nesting too deep") from exc
        problem = json_problem(document)
        if problem is not None:
            raise InvalidParameter(problem)
        return document


class JSONRenderer(renderers.JSONRenderer):
    def render(self, data: Any, accepted_media_type: str | None = None,
               renderer_context: dict | None = None) -> bytes:
        try:
            return super().render(data, accepted_media_type, renderer_context)
        except UnicodeEncodeError:
            return super().render(_encodable_data(data), accepted_media_type, renderer_context)


def _encodable_data(value: Any) -> Any:
    """A copy of rendered data with every string made encodable. Recursive: the data was just
    serialized by the (recursive) JSON encoder, so its depth fits."""
    if isinstance(value, str):
        return encodable(value)
    if isinstance(value, dict):
        return {encodable(str(key)): _encodable_data(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encodable_data(item) for item in value]
    return value
