"""Form fields for the admin, the one input path that does not go through the JSON parser:
its JSON text areas get the same check as request bodies (config.input_safety), so that
`{"a": "\\u0000"}` is a form error instead of a database error (500)."""
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.forms.fields import InvalidJSONInput

from config.input_safety import json_problem


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
