"""The request name patterns of the OpenAPI schema accept exactly what name normalization
accepts (issue 10: names had no pattern; a pattern of the normalized form would refuse
`temperature-consumer`, which the service takes as `TemperatureConsumer`)."""
import re

import pytest
from django.test import override_settings
from hypothesis import given, settings
from hypothesis import strategies as st

from api.name_fields import (
    accepted_instance_id_pattern,
    accepted_instant_pattern,
    accepted_name_pattern,
    accepted_uuid_pattern,
    accepted_version_pattern,
    any_case_pattern,
)
from conventions import names
from conventions.exceptions import InvalidParameter
from conventions.instance_ids import instance_id
from conventions.timestamps import parse_utc
from conventions.uuids import parse_uuid
from conventions.versions import version
from orchestration.history.selectors import job_filters_parse
from orchestration.models import OrchestrationJob

NORMALIZERS = {"system": names.system_name, "serviceDefinition": names.service_definition}
# Letters, digits, every kind of separator and blank, and characters the service refuses.
ALPHABET = st.sampled_from(list("aZ09_- \t\x01\x1f\u3000\u00e9.|/") + ["\x00"])


def _accepted(kind: str, value: str) -> bool:
    if "\x00" in value:  # refused by the input gate before any normalization
        return False
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


def _parses(parse, value: str) -> bool:
    if "\x00" in value:  # refused by the input gate before any parsing
        return False
    try:
        parse(value)
    except InvalidParameter:
        return False
    return True


VERSION_ALPHABET = st.sampled_from(list("0123456789.. \t\x00\x01a\u0663|"))
ID_ALPHABET = st.sampled_from(list("aZ09_- .||\t\x00\x01\u3000\u0663"))


@pytest.mark.parametrize("value", [
    "1", "1.", "1..", "1.2", "1.2.", "1.2..", "1.2.3", "1.2.3.", " 1.2.3\t", "1..2", ".1",
    "1.2.3.4",
    "1234567890", "12345678901", "1.1234567890", "1.12345678901", "1.2.3456789012",
    "1.2.34567890123", "\u0663.0.0", "", " ", "a",
])
def test_the_version_pattern_matches_exactly_what_the_service_accepts(value) -> None:
    pattern = accepted_version_pattern(blank_allowed=False)
    assert (re.fullmatch(pattern, value) is not None) == (
        bool(names.java_trim(value)) and _parses(version, value))


@settings(max_examples=300, derandomize=True, database=None)
@given(st.text(VERSION_ALPHABET, max_size=20))
def test_the_version_pattern_agrees_with_the_service_on_generated_text(value) -> None:
    assert (re.fullmatch(accepted_version_pattern(blank_allowed=True), value) is not None) == (
        _parses(version, value)), repr(value)


@pytest.mark.parametrize("mode", ["extended", "simple"])
@pytest.mark.parametrize("value", [
    "Provider|temperatureInfo|1.0.0", " Provider | temperature-info | 1 ", "Provider|t|",
    "Provider||1", "|t|1", "Provider|t|1|", "Provider|t", "provider|Temperature|1.2",
    "P|t|1.2.3.4", "P|t|\t1.2.3\x01",
])
def test_the_instance_id_pattern_matches_exactly_what_the_service_accepts(mode, value) -> None:
    with override_settings(NORMALIZATION_MODE=mode):
        assert (re.fullmatch(accepted_instance_id_pattern(), value) is not None) == (
            _parses(instance_id, value))


@pytest.mark.parametrize("mode", ["extended", "simple"])
def test_the_instance_id_pattern_agrees_with_the_service_on_generated_text(mode) -> None:
    @settings(max_examples=300, derandomize=True, database=None)
    @given(st.text(ID_ALPHABET, max_size=40))
    def check(value: str) -> None:
        assert (re.fullmatch(accepted_instance_id_pattern(), value) is not None) == (
            _parses(instance_id, value)), repr(value)

    with override_settings(NORMALIZATION_MODE=mode):
        check()


@pytest.mark.parametrize("value", [
    "2025-11-08T12:00:00Z", " 2025-11-08T12:00:00.123456789Z\u3000", "2025-02-28T23:59:59Z",
    "2025-04-30T00:00:00Z", "2025-12-31T00:00:00Z", "0001-01-01T00:00:00Z",
])
def test_the_instant_pattern_accepts_instants_the_service_accepts(value) -> None:
    assert re.fullmatch(accepted_instant_pattern(), value)
    assert parse_utc(value) is not None


@pytest.mark.parametrize("value", [
    "2025-11-08T12:00:00", "2025-11-08 12:00:00Z", "2025-11-08T12:00:00+01:00",
    "2025-02-30T00:00:00Z", "2025-04-31T00:00:00Z", "2025-13-01T00:00:00Z",
    "2025-11-08T24:00:00Z", "0000-01-01T00:00:00Z", "2025-11-08T12:00:00.1234567890Z",
])
def test_the_instant_pattern_refuses_what_the_service_refuses(value) -> None:
    assert not re.fullmatch(accepted_instant_pattern(), value)
    assert parse_utc(value) is None


INSTANT_ALPHABET = st.sampled_from(list("0123456789-:TZ. "))


@settings(max_examples=300, derandomize=True, database=None)
@given(st.from_regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z", fullmatch=True)
       | st.text(INSTANT_ALPHABET, max_size=24))
def test_what_the_instant_pattern_accepts_the_service_accepts(value) -> None:
    """Only one way: February 29 is left out of the pattern in every year."""
    if re.fullmatch(accepted_instant_pattern(), value) and value.strip():
        assert parse_utc(value) is not None, repr(value)
    elif "-02-29T" not in value:
        assert parse_utc(value) is None, repr(value)


A_UUID = "0b7e4f5e-1c2d-4e3f-8a9b-0c1d2e3f4a5b"
UUID_ALPHABET = st.sampled_from(list("0af9AF-gG {}\t\x01\x00:\u0663\u3000"))


def _uuid_matches(value: str) -> bool:
    return re.fullmatch(accepted_uuid_pattern(), value) is not None


def _uuid_accepted(value: str) -> bool:
    return "\x00" not in value and parse_uuid(value) is not None


@pytest.mark.parametrize("value", [
    A_UUID, A_UUID.upper(), f" {A_UUID}\t", f"\x01{A_UUID}\x1f", f"\u3000{A_UUID}",
    "{" + A_UUID + "}", "urn:uuid:" + A_UUID, A_UUID.replace("-", ""), A_UUID[:-1],
    A_UUID + "0", "1-1-1-1-1", A_UUID.replace("0", "\u0663"), A_UUID.replace("a", "g"), "",
    " ",
])
def test_the_uuid_pattern_matches_exactly_what_the_service_accepts(value) -> None:
    assert _uuid_matches(value) == _uuid_accepted(value)


@settings(max_examples=300, derandomize=True, database=None)
@given(st.builds(lambda blanks, middle, end: blanks + middle + end,
                 st.text(st.sampled_from(" \t\x01\u3000"), max_size=2),
                 st.uuids().map(str) | st.text(UUID_ALPHABET, max_size=40),
                 st.text(st.sampled_from(" \t\x01\u3000"), max_size=2)))
def test_the_uuid_pattern_agrees_with_the_service_on_generated_text(value) -> None:
    assert _uuid_matches(value) == _uuid_accepted(value), repr(value)


def _filter_accepted(**filters) -> bool:
    try:
        job_filters_parse(**filters)
    except InvalidParameter:
        return False
    return True


@pytest.mark.parametrize("value", [
    "PENDING", "done", " In_Progress\t", "\x01error\x01", "ERRORS", "IN-PROGRESS", "DONE.",
    "\u3000DONE", "", " ", "pull", "PUSH",
])
def test_the_job_status_and_type_patterns_match_exactly_what_the_history_query_accepts(
        value) -> None:
    statuses = any_case_pattern(OrchestrationJob.Status.values)
    types = any_case_pattern(OrchestrationJob.Type.values)
    assert (re.fullmatch(statuses, value) is not None) == _filter_accepted(statuses=[value])
    assert (re.fullmatch(types, value) is not None) == _filter_accepted(type=value)

