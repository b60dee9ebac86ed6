"""Unit tests for the metadata requirement language (pure module: no database)."""
import re

import pytest

from conventions.exceptions import InvalidParameter
from store.metadata_requirements import (
    OPERATORS,
    matches,
    matches_any,
    regex_budget,
    resolve,
    validate_requirement,
    validate_requirements,
)


def op(name: str, value: object) -> dict:
    return {"op": name, "value": value}


def check(actual: object, name: str, value: object) -> bool:
    """Evaluate one operator against a metadata value stored under `k`."""
    requirement = {"k": op(name, value)}
    validate_requirement(requirement)
    return matches({"k": actual}, requirement)


def raises_exactly(message: str):
    return pytest.raises(InvalidParameter, match=f"^{re.escape(message)}$")


class ReferenceExampleTests:
    @pytest.mark.parametrize("metadata, requirement, expected", [
        ({"key": {"subkey": "value"}}, {"key.not_subkey": "value"}, False),
        ({"key": {"subkey": "value"}}, {"key.subkey": "not_value"}, False),
        ({"key": {"subkey": 5}}, {"key.subkey": op("LESS_THAN", 10)}, True),
        ({"key": [1, 2, 4, 8, 16]}, {"key[3]": op("LESS_THAN", 10)}, True),
        (None, {}, True),
        ({}, {"key": "value"}, False),
        ({"key": [1, 2, 3, 4]}, {"key": op("CONTAINS_ANY", [4, 5])}, True),
        ({"key": "c"}, {"key": op("IN", ["a", "b", "c"])}, True),
        ({"key": [1, 2, 3]}, {"key": [1, 3, 2]}, False),
    ])
    def test_it_answers_the_reference_table(self, metadata, requirement, expected):
        validate_requirement(requirement)
        assert matches(metadata, requirement) is expected


# (operator, actual, value, expected). Every operator has a true, a false and a wrong-type case.
OPERATOR_CASES = [
    ("EQUALS", "a", "a", True), ("EQUALS", "a", "b", False), ("EQUALS", 1, "1", False),
    ("NOT_EQUALS", "a", "b", True), ("NOT_EQUALS", "a", "a", False),
    ("NOT_EQUALS", 1, "1", True),
    ("EQUALS_IGNORE_CASE", "AbC", "aBc", True), ("EQUALS_IGNORE_CASE", "abc", "abd", False),
    ("EQUALS_IGNORE_CASE", 1, "1", False),
    ("NOT_EQUALS_IGNORE_CASE", "abc", "abd", True),
    ("NOT_EQUALS_IGNORE_CASE", "AbC", "abc", False),
    ("NOT_EQUALS_IGNORE_CASE", 1, "1", True),
    ("INCLUDES", "abcdef", "cd", True), ("INCLUDES", "abcdef", "CD", False),
    ("INCLUDES", ["cd"], "cd", False),
    ("NOT_INCLUDES", "abcdef", "CD", True), ("NOT_INCLUDES", "abcdef", "cd", False),
    ("NOT_INCLUDES", ["cd"], "cd", True),
    ("INCLUDES_IGNORE_CASE", "abCDef", "cD", True),
    ("INCLUDES_IGNORE_CASE", "abcdef", "xy", False),
    ("INCLUDES_IGNORE_CASE", "abc", 1, False),
    ("NOT_INCLUDES_IGNORE_CASE", "abcdef", "xy", True),
    ("NOT_INCLUDES_IGNORE_CASE", "abCDef", "Cd", False),
    ("NOT_INCLUDES_IGNORE_CASE", "abc", 1, True),
    ("STARTS_WITH", "abcdef", "ab", True), ("STARTS_WITH", "abcdef", "AB", False),
    ("STARTS_WITH", 123, "1", False),
    ("NOT_STARTS_WITH", "abcdef", "bc", True), ("NOT_STARTS_WITH", "abcdef", "ab", False),
    ("NOT_STARTS_WITH", 123, "1", True),
    ("STARTS_WITH_IGNORE_CASE", "ABcdef", "aB", True),
    ("STARTS_WITH_IGNORE_CASE", "abcdef", "bc", False),
    ("STARTS_WITH_IGNORE_CASE", "abc", None, False),
    ("NOT_STARTS_WITH_IGNORE_CASE", "abcdef", "bc", True),
    ("NOT_STARTS_WITH_IGNORE_CASE", "ABcdef", "ab", False),
    ("NOT_STARTS_WITH_IGNORE_CASE", "abc", None, True),
    ("ENDS_WITH", "abcdef", "ef", True), ("ENDS_WITH", "abcdef", "EF", False),
    ("ENDS_WITH", True, "e", False),
    ("NOT_ENDS_WITH", "abcdef", "de", True), ("NOT_ENDS_WITH", "abcdef", "ef", False),
    ("NOT_ENDS_WITH", True, "e", True),
    ("ENDS_WITH_IGNORE_CASE", "abcdEF", "eF", True),
    ("ENDS_WITH_IGNORE_CASE", "abcdef", "de", False),
    ("ENDS_WITH_IGNORE_CASE", {"a": "ef"}, "ef", False),
    ("NOT_ENDS_WITH_IGNORE_CASE", "abcdef", "de", True),
    ("NOT_ENDS_WITH_IGNORE_CASE", "abcdEF", "ef", False),
    ("NOT_ENDS_WITH_IGNORE_CASE", {"a": "ef"}, "ef", True),
    ("REGEXP", "v1.2.3", r"v\d+\.\d+\.\d+", True), ("REGEXP", "xv1", r"v\d", False),
    ("REGEXP", 12, r"\d+", False),
    ("NOT_REGEXP", "xv1", r"v\d", True), ("NOT_REGEXP", "v1", r"v\d", False),
    ("NOT_REGEXP", 12, r"\d+", True),
    ("LESS_THAN", 5, 10, True), ("LESS_THAN", 10, 10, False), ("LESS_THAN", "5", 10, False),
    ("LESS_THAN_OR_EQUALS_TO", 10, 10, True), ("LESS_THAN_OR_EQUALS_TO", 11, 10, False),
    ("LESS_THAN_OR_EQUALS_TO", 5, "10", False),
    ("GREATER_THAN", 11, 10, True), ("GREATER_THAN", 10, 10, False),
    ("GREATER_THAN", [11], 10, False),
    ("GREATER_THAN_OR_EQUALS_TO", 10, 10, True), ("GREATER_THAN_OR_EQUALS_TO", 9, 10, False),
    ("GREATER_THAN_OR_EQUALS_TO", True, 0, False),
    ("SIZE_EQUALS", "abc", 3, True), ("SIZE_EQUALS", [1, 2], 2, True),
    ("SIZE_EQUALS", [1, 2], 3, False), ("SIZE_EQUALS", {"a": 1}, 1, False),
    ("SIZE_EQUALS", "abc", 3.0, False), ("SIZE_EQUALS", "a", True, False),
    ("SIZE_NOT_EQUALS", [1, 2], 3, True), ("SIZE_NOT_EQUALS", "abc", 3, False),
    ("SIZE_NOT_EQUALS", 123, 3, True),
    ("CONTAINS", [1, "a"], "a", True), ("CONTAINS", [1, 2], 3, False),
    ("CONTAINS", "abc", "a", False), ("CONTAINS", [1.0], 1, False),
    ("NOT_CONTAINS", [1, 2], 3, True), ("NOT_CONTAINS", [1, "a"], "a", False),
    ("NOT_CONTAINS", "abc", "a", True),
    ("CONTAINS_ANY", [1, 2], [9, 2], True), ("CONTAINS_ANY", [1, 2], [3, 4], False),
    ("CONTAINS_ANY", [1, 2], 1, False), ("CONTAINS_ANY", 1, [1], False),
    ("CONTAINS_ANY", [1, 2], [], False), ("CONTAINS_ANY", [True], [1], False),
    ("NOT_CONTAINS_ANY", [1, 2], [3, 4], True), ("NOT_CONTAINS_ANY", [1, 2], [2], False),
    ("NOT_CONTAINS_ANY", [1, 2], 1, True),
    ("IN", "c", ["a", "c"], True), ("IN", "d", ["a", "c"], False), ("IN", "a", "abc", False),
    ("IN", 1, [1.0, True], False),
    ("NOT_IN", "d", ["a", "c"], True), ("NOT_IN", "c", ["a", "c"], False),
    ("NOT_IN", "a", "abc", True),
]


class OperatorTests:
    def test_it_knows_exactly_thirty_operators(self):
        assert len(OPERATORS) == 30
        assert {case[0] for case in OPERATOR_CASES} == OPERATORS

    @pytest.mark.parametrize("name, actual, value, expected", OPERATOR_CASES)
    def test_it_evaluates_each_operator(self, name, actual, value, expected):
        assert check(actual, name, value) is expected

    @pytest.mark.parametrize("actual, value", [(1, 1.5), (1.5, 2), (2.0, 2)])
    def test_it_compares_int_and_float_numerically(self, actual, value):
        assert check(actual, "LESS_THAN_OR_EQUALS_TO", value)

    @pytest.mark.parametrize("name", ["LESS_THAN", "GREATER_THAN_OR_EQUALS_TO"])
    def test_it_never_treats_a_bool_requirement_as_a_number(self, name):
        assert not check(0, name, True) and not check(5, name, False)

    def test_it_matches_a_regexp_in_full_only(self):
        assert not check("abc", "REGEXP", "b")
        assert check("abc", "REGEXP", ".*b.*")

    def test_it_ignores_case_beyond_ascii(self):
        assert check("STRASSE", "EQUALS_IGNORE_CASE", "straße")

    @pytest.mark.parametrize("name", [" less_than ", "Less_Than", "\tLESS_THAN\n"])
    def test_it_trims_and_upper_cases_the_operator_name(self, name):
        assert check(5, name, 10)
        assert not check(50, name, 10)

    def test_it_compares_a_non_operator_object_with_equals(self):
        for value in ({"op": "LESS_THAN"}, {"value": 10},
                      {"op": "LESS_THAN", "value": 10, "x": 1}):
            requirement = {"k": value}
            validate_requirement(requirement)
            assert matches({"k": dict(value)}, requirement)
            assert not matches({"k": 5}, requirement)


class MissingValueTests:
    @pytest.mark.parametrize("name", sorted(OPERATORS))
    def test_it_fails_every_operator_on_a_missing_key(self, name):
        requirement = {"absent": op(name, "x")}
        validate_requirement(requirement)
        assert not matches({"k": "x"}, requirement)

    @pytest.mark.parametrize("name", sorted(OPERATORS))
    def test_it_fails_every_operator_on_json_null(self, name):
        requirement = {"k": op(name, None)}
        assert not matches({"k": None}, requirement)

    @pytest.mark.parametrize("name", ["NOT_EQUALS", "NOT_IN", "NOT_CONTAINS", "SIZE_NOT_EQUALS",
                                      "NOT_REGEXP", "NOT_INCLUDES"])
    def test_it_never_satisfies_a_negation_with_a_missing_key(self, name):
        assert not matches({}, {"a.b": op(name, "x")})
        assert not matches({"a": None}, {"a.b": op(name, "x")})

    def test_it_fails_equals_null_on_a_null_value(self):
        assert not matches({"k": None}, {"k": None})

    @pytest.mark.parametrize("metadata", [None, {}, [], "text"])
    def test_it_fails_a_non_empty_requirement_without_usable_metadata(self, metadata):
        assert not matches(metadata, {"k": op("NOT_EQUALS", "x")})

    @pytest.mark.parametrize("metadata", [None, {}, {"k": 1}])
    def test_it_matches_an_empty_requirement_always(self, metadata):
        assert matches(metadata, {})


class TypeStrictnessTests:
    @pytest.mark.parametrize("actual, value", [
        (1, 1.0), (1.0, 1), (True, 1), (1, True), (False, 0), ("1", 1), ([1], 1),
        ({"a": 1}, {"a": 1.0}), ({"a": [True]}, {"a": [1]}), ([[1, 2]], [[1, 2.0]]),
        ({"a": 1}, {"a": 1, "b": 2}), ([1, 2], [1, 2, 3]), ({"a": 1}, [("a", 1)]),
    ])
    def test_it_tells_apart_values_of_different_json_kinds(self, actual, value):
        assert not check(actual, "EQUALS", value)
        assert check(actual, "NOT_EQUALS", value)

    @pytest.mark.parametrize("value", [
        1, 1.5, True, "s", [1, [2.0, {"x": False}]], {"a": {"b": [1, "c"]}, "d": 2.5},
    ])
    def test_it_equals_identical_values(self, value):
        assert check(value, "EQUALS", value)

    def test_it_ignores_dict_key_order(self):
        assert check({"a": 1, "b": 2}, "EQUALS", {"b": 2, "a": 1})

    def test_it_uses_the_plain_shorthand_strictly(self):
        assert not matches({"k": 1}, {"k": 1.0})
        assert not matches({"k": True}, {"k": 1})
        assert matches({"k": [1, {"a": None}]}, {"k": [1, {"a": None}]})


METADATA = {
    "a": {"b": [{"c": "first"}, {"c": "second"}], "list": [[10, 11], [20, 21]]},
    "plain": [1, 2, 3],
    "notlist": {"0": "zero"},
    "key[text]": "literal text",
    "key[-2]": "literal negative",
    "key[]": "literal empty",
    "[0]": "literal bare",
    "falsy": 0,
    "nul": None,
}


class PathTests:
    @pytest.mark.parametrize("path, expected", [
        ("a.b[1].c", (True, "second")),
        ("a.b[0].c", (True, "first")),
        ("plain[0]", (True, 1)),
        ("plain[02]", (True, 3)),
        ("a.list[1][0]", (True, 20)),
        ("key[text]", (True, "literal text")),
        ("key[-2]", (True, "literal negative")),
        ("key[]", (True, "literal empty")),
        ("[0]", (True, "literal bare")),
        ("falsy", (True, 0)),
        ("a.b", (True, [{"c": "first"}, {"c": "second"}])),
    ])
    def test_it_resolves_paths(self, path, expected):
        assert resolve(METADATA, path) == expected

    @pytest.mark.parametrize("path", [
        "plain[3]",          # out of range
        "a.b[2].c",          # out of range in the middle
        "notlist[0]",        # not a list
        "falsy[0]",          # a number is not a list
        "plain[0].x",        # a number is not a dict
        "a.b.c",             # a list is not a dict
        "missing[0]",        # nothing to index
        "key[-1]",           # a literal key that does not exist (not a negative index)
        "nul",               # JSON null counts as missing
        "nul.x",
        "a.b[1].c.d",
        "",
        "a.",
    ])
    def test_it_reports_unresolvable_paths_as_missing(self, path):
        assert resolve(METADATA, path) == (False, None)

    @pytest.mark.parametrize("metadata", [None, [], "x", 5])
    def test_it_finds_nothing_in_non_object_metadata(self, metadata):
        assert resolve(metadata, "a") == (False, None)

    def test_it_uses_paths_in_requirements(self):
        assert matches(METADATA, {"a.b[1].c": "second", "plain[2]": op("GREATER_THAN", 2)})
        assert not matches(METADATA, {"plain[-1]": op("NOT_EQUALS", 3)})
        assert matches(METADATA, {"key[-2]": op("STARTS_WITH", "literal")})


class CombinationTests:
    def test_it_requires_every_entry_of_one_requirement(self):
        metadata = {"a": 1, "b": "x"}
        assert matches(metadata, {"a": 1, "b": "x"})
        assert not matches(metadata, {"a": 1, "b": "y"})
        assert not matches(metadata, {"a": 2, "b": "x"})

    @pytest.mark.parametrize("requirements, expected", [
        ([{"a": 2}, {"b": "x"}], True),
        ([{"a": 2}, {"b": "y"}], False),
        ([{"a": 1, "b": "y"}, {"a": 2, "b": "x"}], False),
        ([{"a": 1, "b": "y"}, {"a": 1, "b": "x"}], True),
        ([{"missing": 1}, {}], True),
        (None, True),
        ([], True),
    ])
    def test_it_accepts_any_matching_requirement(self, requirements, expected):
        validate_requirements(requirements)
        assert matches_any({"a": 1, "b": "x"}, requirements) is expected

    @pytest.mark.parametrize("requirements, expected", [(None, True), ([], True), ([{}], True),
                                                        ([{"a": 1}], False)])
    def test_it_handles_null_metadata_in_a_list(self, requirements, expected):
        assert matches_any(None, requirements) is expected


class ValidationTests:
    @pytest.mark.parametrize("requirements", [None, [], [{}], [{"a": 1}, {"b": op("IN", [1])}]])
    def test_it_accepts_valid_lists(self, requirements):
        validate_requirements(requirements)

    @pytest.mark.parametrize("requirements", [{}, {"a": 1}, "x", 5, ({"a": 1},)])
    def test_it_rejects_a_non_list(self, requirements):
        with raises_exactly("metadataRequirements should be a list of JSON objects"):
            validate_requirements(requirements)

    def test_it_rejects_a_null_element(self):
        with raises_exactly("metadataRequirements contains null element"):
            validate_requirements([{}, None])

    @pytest.mark.parametrize("element", ["x", 1, [], [{"a": 1}], True])
    def test_it_rejects_a_non_object_element(self, element):
        message = "metadataRequirements contains an invalid element: it should be a JSON object"
        with raises_exactly(message):
            validate_requirements([{}, element])
        with raises_exactly(message):
            validate_requirement(element)

    def test_it_names_the_given_field(self):
        with raises_exactly("filters should be a list of JSON objects"):
            validate_requirements("x", field="filters")
        with raises_exactly("filters contains null element"):
            validate_requirements([None], field="filters")
        with raises_exactly("filters contains an invalid element: it should be a JSON object"):
            validate_requirement(None, field="filters")

    @pytest.mark.parametrize("name", ["LESS", " not_a_thing ", "", "NOT_LESS_THAN",
                                      "NOT_SIZE_EQUALS"])
    def test_it_rejects_an_unknown_operator(self, name):
        with raises_exactly(f"Invalid metadata operation requirement: {name}"):
            validate_requirements([{"a": 1}, {"k": 1, "j": op(name, 1)}])

    @pytest.mark.parametrize("name, shown", [(5, "5"), (None, "None"), (["EQUALS"], "['EQUALS']")])
    def test_it_rejects_a_non_string_operator(self, name, shown):
        with raises_exactly(f"Invalid metadata operation requirement: {shown}"):
            validate_requirement({"k": op(name, 1)})

    def test_it_rejects_an_unknown_operator_in_matches_too(self):
        with raises_exactly("Invalid metadata operation requirement: NOPE"):
            matches({"k": 1}, {"k": op("NOPE", 1)})

    @pytest.mark.parametrize("name", ["REGEXP", "not_regexp"])
    @pytest.mark.parametrize("pattern", ["(", "[a-", "*x"])
    def test_it_rejects_an_invalid_regular_expression(self, name, pattern):
        with raises_exactly(f"Invalid regular expression in metadata requirement: {pattern}"):
            validate_requirement({"k": op(name, pattern)})

    def test_it_does_not_check_patterns_of_other_operators(self):
        validate_requirement({"k": op("EQUALS", "(")})
        validate_requirement({"k": "("})

    def test_it_accepts_every_operator(self):
        validate_requirement({f"k{i}": op(name.lower(), "x") for i, name in enumerate(OPERATORS)})


class RegexSafetyTests:
    def test_it_stops_a_catastrophically_backtracking_pattern(self):
        requirement = {"name": {"op": "REGEXP", "value": "(a|aa)+"}}
        with pytest.raises(InvalidParameter, match="takes too long"):
            matches({"name": "a" * 40 + "!"}, requirement)

    def test_it_refuses_patterns_once_the_requests_budget_is_spent(self):
        requirement = {"name": {"op": "REGEXP", "value": "a+"}}
        with regex_budget(0.0), pytest.raises(InvalidParameter, match="take too long together"):
            matches({"name": "aaa"}, requirement)

    def test_it_shares_the_budget_between_matches(self):
        requirement = {"name": {"op": "REGEXP", "value": "a+"}}
        with regex_budget():
            assert all(matches({"name": "a" * i}, requirement) for i in range(1, 200))
        assert matches({"name": "aaa"}, requirement)  # no budget outside the block

    def test_it_refuses_an_overlong_pattern(self):
        with pytest.raises(InvalidParameter, match="too long"):
            validate_requirement({"name": {"op": "REGEXP", "value": "a" * 1001}})
