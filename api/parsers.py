"""The only request parser: JSON, with nesting too deep for Python's decoder answered as a
parse error (400) instead of an unhandled RecursionError (500), and every parsed body checked
for what the service cannot store or echo (api.input_safety), so that no field needs its
own check."""
from rest_framework import parsers
from rest_framework.exceptions import ParseError

from api.input_safety import json_problem
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
