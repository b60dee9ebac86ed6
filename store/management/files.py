"""Reading the JSON files of the import commands."""
import json

from django.core.management.base import CommandError
from rest_framework.exceptions import ValidationError
from rest_framework.serializers import Serializer

from config.errors import first_validation_message
from config.input_safety import json_problem


def read_validated(path: str, serializer_class: type[Serializer]) -> dict:
    """The file's JSON, type-checked by the API's request serializer; CommandError naming
    the problem otherwise."""
    try:
        with open(path, encoding="utf-8") as file:
            data = json.load(file)
    except (OSError, ValueError) as exc:
        raise CommandError(f"Cannot read {path}: {exc}") from exc
    problem = json_problem(data)  # what the database cannot store, as for request bodies
    if problem is not None:
        raise CommandError(f"Cannot read {path}: {problem}")
    serializer = serializer_class(data=data)
    try:
        serializer.is_valid(raise_exception=True)
    except ValidationError as exc:
        raise CommandError(first_validation_message(exc.detail)) from exc
    return serializer.validated_data
