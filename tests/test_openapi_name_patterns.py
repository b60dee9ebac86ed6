"""The request name patterns of the OpenAPI schema accept exactly what name normalization
accepts (issue 10: names had no pattern; a pattern of the normalized form would refuse
`temperature-consumer`, which the service takes as `TemperatureConsumer`)."""
import re

import pytest
from django.test import override_settings
from hypothesis import given, settings
from hypothesis import strategies as st

from config.conventions import names
from config.exceptions import InvalidParameter
from config.name_fields import accepted_name_pattern

NORMALIZERS = {"system": names.system_name, "serviceDefinition": names.service_definition}
# Letters, digits, every kind of separator and blank, and characters the service refuses.
ALPHABET = st.sampled_from(list("aZ09_- \t\x01\x1f\u3000\u00e9.|/") + ["\x00"])


def _accepted(kind: str, value: str) -> bool:
    try:
        NORMALIZERS[kind](value)
    except InvalidParameter:
        return False
    return True


def _matches(kind: str, value: str) -> bool:
    return re.fullmatch(accepted_name_pattern(kind, blank_allowed=False), value) is not None


@pytest.mark.parametrize("mode", ["extended", "simple"])
@pytest.mark.parametrize("kind", list(NORMALIZERS))
@pytest.mark.parametrize("value", [
    "temperature-consumer", "TemperatureConsumer", "temperatureInfo", "  Abc\t", "_abc", "abc_",
    "1abc", "a b", "a\u3000b", "a\x01b", "\x01abc\x01", "", "   ", "-", "a" * 63, "a" * 64,
    "a_" * 63, "a_" * 64, "abc.def", "Ab\u00e9",
])
def test_the_pattern_matches_exactly_what_normalization_accepts(mode, kind, value) -> None:
    with override_settings(NORMALIZATION_MODE=mode):
        assert _matches(kind, value) == _accepted(kind, value)


@pytest.mark.parametrize("mode", ["extended", "simple"])
@pytest.mark.parametrize("kind", list(NORMALIZERS))
def test_the_pattern_agrees_with_normalization_on_generated_text(mode, kind) -> None:
    @settings(max_examples=300, derandomize=True, database=None)
    @given(st.text(ALPHABET, max_size=140))
    def check(value: str) -> None:
        assert _matches(kind, value) == _accepted(kind, value), repr(value)

    with override_settings(NORMALIZATION_MODE=mode):
        check()


def test_a_blank_is_accepted_only_where_the_field_allows_it() -> None:
    assert re.fullmatch(accepted_name_pattern("system", blank_allowed=True), " \x01 ")
    assert not re.fullmatch(accepted_name_pattern("system", blank_allowed=False), " \x01 ")
