"""Edges of the metadata requirement language that the mutation check (docs/testing.md) found
untested: the regular-expression limits and the budget's scope."""
import time

import pytest

from conventions.exceptions import InvalidParameter
from store.metadata_requirements import matches, regex_budget, validate_requirement

BACKTRACKING = {"name": {"op": "REGEXP", "value": "(a|aa)+"}}
NOT_MATCHING = {"name": "a" * 40 + "!"}


class RegexLimitTests:
    def test_it_stops_a_backtracking_match_after_a_tenth_of_a_second(self):
        started = time.monotonic()
        with pytest.raises(InvalidParameter, match="takes too long"):
            matches(NOT_MATCHING, BACKTRACKING)

        assert time.monotonic() - started < 0.6

    def test_it_keeps_the_per_match_limit_inside_a_budget(self):
        started = time.monotonic()
        with regex_budget(), pytest.raises(InvalidParameter, match="takes too long:"):
            matches(NOT_MATCHING, BACKTRACKING)

        assert time.monotonic() - started < 0.6

    def test_it_accepts_a_pattern_of_the_maximum_length(self):
        validate_requirement({"name": {"op": "REGEXP", "value": "a" * 1000}})

    def test_it_ends_the_budget_with_its_block(self):
        requirement = {"name": {"op": "REGEXP", "value": "a+"}}
        with regex_budget(0.0):
            pass

        assert matches({"name": "aaa"}, requirement)
