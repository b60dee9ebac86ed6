"""Form fields and widgets for the admin, the one input path that does not go through the JSON
parser: its JSON text areas get the same check as request bodies (api.input_safety), so
that `{"a": "\\u0000"}` is a form error instead of a database error (500)."""
from collections.abc import Callable, Iterable
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.forms.fields import InvalidJSONInput
from django.utils.html import format_html, format_html_join

from api.input_safety import json_problem


class CheckedJSONField(forms.JSONField):
    def to_python(self, value: Any) -> Any:
        converted = super().to_python(value)
        problem = json_problem(converted)
        if problem is not None:
            raise ValidationError(problem, code="invalid")
        return converted

    def bound_data(self, data: Any, initial: Any) -> Any:
        """A refused value is shown again as typed: parsed, it could hold a surrogate that the
        page cannot encode."""
        bound = super().bound_data(data, initial)
        if not isinstance(bound, InvalidJSONInput) and json_problem(bound) is not None:
            return InvalidJSONInput(data)
        return bound


class DatalistInput(forms.TextInput):
    """A text box offering suggestions from an HTML `<datalist>`: the browser filters them as
    one types, no JavaScript is needed, and any other value can still be typed."""

    def __init__(self, suggestions: Callable[[], Iterable[str]], attrs: dict | None = None):
        super().__init__(attrs)
        self.suggestions = suggestions  # called at each rendering

    def render(self, name, value, attrs=None, renderer=None):
        list_id = f"{(attrs or {}).get('id') or name}_suggestions"
        html = super().render(name, value, {**(attrs or {}), "list": list_id}, renderer)
        options = format_html_join("", '<option value="{}"></option>',
                                   ((option,) for option in self.suggestions()))
        return html + format_html('<datalist id="{}">{}</datalist>', list_id, options)
