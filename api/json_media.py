"""JSON in and JSON out: the only request parser and the only response renderer, DRF's JSON
ones made unable to fail where the service must answer (docs/errors.md). The parser answers
nesting too deep for Python's decoder as a 400 (not a RecursionError, 500) and checks every
body (api.input_safety); the renderer replaces what UTF-8 cannot encode (unpaired
surrogates, from a message echoing input or data from elsewhere) by U+FFFD instead of
failing with a 500. Every JSON answer ends with a newline, so that a terminal shows the next
prompt on a line of its own (JSON allows white space after the value)."""
from typing import Any

from drf_spectacular.renderers import OpenApiJsonRenderer, OpenApiJsonRenderer2
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


class NewlineEnded:
    """A renderer whose every non-empty answer ends with a newline."""

    def render(self, data: Any, accepted_media_type: str | None = None,
               renderer_context: dict | None = None) -> bytes:
        text = super().render(data, accepted_media_type, renderer_context)
        return text + b"\n" if text else text


class JSONRenderer(NewlineEnded, renderers.JSONRenderer):
    def render(self, data: Any, accepted_media_type: str | None = None,
               renderer_context: dict | None = None) -> bytes:
        try:
            return super().render(data, accepted_media_type, renderer_context)
        except UnicodeEncodeError:
            return super().render(_encodable_data(data), accepted_media_type, renderer_context)


# The OpenAPI document in JSON (`/api/schema/?format=json`; its YAML ends with a newline).
class SchemaJSONRenderer(NewlineEnded, OpenApiJsonRenderer):
    pass


class SchemaJSONRenderer2(NewlineEnded, OpenApiJsonRenderer2):
    pass


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
