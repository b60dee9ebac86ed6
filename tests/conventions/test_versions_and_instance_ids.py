"""Examples from reference-simple §4.3–4.4."""
import pytest

from conventions.exceptions import InvalidParameter
from conventions.instance_ids import (
    ServiceInstanceId,
    instance_id,
    parse_instance_id,
)
from conventions.versions import normalize_version, validate_version, version

PREFIX = "Version verification failure: "


class VersionTests:
    @pytest.mark.parametrize("raw, normalized", [
        (None, "1.0.0"), ("", "1.0.0"), ("   ", "1.0.0"), ("2", "2.0.0"), ("2.3", "2.3.0"),
        ("2.3.4", "2.3.4"), ("2.", "2.0.0"), (" 1.0 ", "1.0.0"), ("1.2.3.4", "1.2.3.4"),
    ])
    def test_it_normalizes(self, raw, normalized):
        assert normalize_version(raw) == normalized

    @pytest.mark.parametrize("valid", ["1.0.0", "0.02.3", "10.20.30"])
    def test_it_accepts_valid_versions(self, valid):
        assert validate_version(valid) == valid

    @pytest.mark.parametrize("invalid, message", [
        ("12345.67890.12345", "version is too long"),
        ("1.2.3.4", "version must contain exactly 2 separator . characters"),
        ("1.23.", "version must contain exactly 3 numbers"),
        ("1.23.SOMETHING", "the version should only contain numbers and separator . characters"),
        ("1.-2.3", "the version should only contain numbers and separator . characters"),
    ])
    def test_it_rejects_invalid_versions_in_the_reference_order(self, invalid, message):
        with pytest.raises(InvalidParameter) as error:
            validate_version(invalid)
        assert error.value.message == PREFIX + message

    def test_it_normalizes_before_validating(self):
        assert version("3.1") == "3.1.0"


class ServiceInstanceIdTests:
    @pytest.mark.parametrize("raw, normalized", [
        ("system-name|service_def|1.2", "SystemName|serviceDef|1.2.0"),
        ("temperature-provider|temperature_info|2", "TemperatureProvider|temperatureInfo|2.0.0"),
        (" Provider1 | service1 | 1.0 ", "Provider1|service1|1.0.0"),
        ("Provider1|service1|1.0.0", "Provider1|service1|1.0.0"),
    ])
    def test_it_normalizes_each_part(self, raw, normalized):
        assert instance_id(raw) == normalized

    def test_it_exposes_the_parts(self):
        assert parse_instance_id("p|svc|2") == ServiceInstanceId("P", "svc", "2.0.0")

    @pytest.mark.parametrize("raw, shown", [
        ("A||1.0.0", "A||1.0.0"),
        ("A|b|1.0.0|", "A|b|1.0.0|"),
        ("A|b", "A|b"),
        ("system-name", "system-name"),
        ("A| |1.0.0", "A| |1.0.0"),
        ("|b|1.0.0", "|b|1.0.0"),
        ("A|b|", "A|b|"),
        ("   ", ""),
    ])
    def test_it_rejects_ids_without_three_non_empty_parts(self, raw, shown):
        with pytest.raises(InvalidParameter) as error:
            parse_instance_id(raw)
        assert error.value.message == (
            f"The specified service instance identifier does not match the naming convention: {shown}"
        )

    def test_it_reports_a_missing_id_as_null(self):
        with pytest.raises(InvalidParameter, match="naming convention: null$"):
            parse_instance_id(None)

    def test_it_reports_the_invalid_part_with_its_own_message(self):
        with pytest.raises(InvalidParameter, match="system name does not match.*: Inv@lid$"):
            parse_instance_id("inv@lid|svc|1.0.0")
        with pytest.raises(InvalidParameter, match="service definition name does not match"):
            parse_instance_id("Provider|2nd|1.0.0")
        with pytest.raises(InvalidParameter, match="^Version verification failure: "):
            parse_instance_id("Provider|svc|1.x.0")
