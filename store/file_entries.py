"""The entries of an import file checked one by one (issue 35), so that a file with many bad
entries is fixed in one round: every bad entry is found, not only the first, each named by its
place in the file and refused with the message the API gives for it. store.files reads rule
and instance files with it (for the commands and the admin alike), import_flexible_rules its
own format."""
from collections.abc import Callable, Sequence
from typing import Any

from rest_framework.serializers import Serializer

from api.errors import first_validation_message
from api.input_safety import json_problem
from conventions.exceptions import InvalidParameter

SHOWN = 10  # bad entries the one-line message names (the command and the admin list them all)


def one_line(text: str) -> str:
    """A message with its line breaks escaped, so that a list of them has one a line."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


class BadEntries(InvalidParameter):
    """An import file with bad entries, so nothing is imported. `problems`: one line per bad
    entry, in file order (`entries[3]: Priority should be positive`); `differing`: how many of
    them are refused only because they differ from the stored entry (an update would take
    them)."""

    def __init__(self, source: str, problems: Sequence[str], *, differing: int = 0) -> None:
        self.source, self.differing = source, differing
        self.problems = [one_line(problem) for problem in problems]
        shown = "; ".join(self.problems[:SHOWN])
        rest = len(self.problems) - SHOWN
        super().__init__(f"{self.summary}: {shown}" + (f"; and {rest} more" if rest > 0 else ""))

    @property
    def summary(self) -> str:
        count = len(self.problems)
        return (f"{count} bad {'entry' if count == 1 else 'entries'} in {self.source}, nothing "
                "imported")


def _without(data: dict, key: str, indices: Sequence[int]) -> dict:
    """`data` with the entries at `indices` as null (the create serializers take null entries;
    their readers skip them)."""
    entries = list(data[key])
    for index in indices:
        entries[index] = None
    return {**data, key: entries}


def entries_typed(data: Any, serializer_class: type[Serializer], *, key: str,
                  path_of: Callable[[int], str]) -> tuple[dict, dict[int, str]]:
    """Type-check a parsed file with the API's create serializer, entry by entry: its validated
    data, each refused entry as null, and why each was refused by index, the message naming the
    entry as `path_of(index)` (`entries[3]`, or "" for messages relative to the entry). What the
    input gate refuses (api.input_safety) is refused here too. A problem outside the entries (the
    file is no JSON object, `key` no list, …) is the file's: InvalidParameter."""
    problems: dict[int, str] = {}
    items = data.get(key) if isinstance(data, dict) else None
    if json_problem(data) is not None:
        if isinstance(items, list):
            for index, item in enumerate(items):
                problem = json_problem(item, path_of(index))
                if problem is not None:
                    problems[index] = problem
            data = _without(data, key, list(problems))
        problem = json_problem(data)  # outside the entries
        if problem is not None:
            raise InvalidParameter(problem)
    for _ in range(2):  # a second time without the entries refused the first time
        serializer = serializer_class(data=data)
        if serializer.is_valid():
            return serializer.validated_data, problems
        errors = serializer.errors
        by_entry = errors.get(key) if list(errors) == [key] else None
        if not isinstance(by_entry, dict) or not all(isinstance(i, int) for i in by_entry):
            break
        problems.update({index: first_validation_message(detail, path_of(index))
                         for index, detail in by_entry.items()})
        data = _without(data, key, list(by_entry))
    raise InvalidParameter(first_validation_message(errors))
