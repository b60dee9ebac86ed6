"""The only response renderer: DRF's JSON renderer, made unable to fail on text it cannot
encode. Unpaired surrogates are the only characters of a Python str that UTF-8 cannot hold;
the parser refuses them in requests (api.input_safety), and should one still reach a
response (a message echoing input, data from elsewhere) it is replaced by U+FFFD instead of
turning the answer into a 500."""
from typing import Any

from rest_framework import renderers

from api.input_safety import encodable


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
