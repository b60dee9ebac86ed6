"""Examples from reference-simple §4.1–4.2 (the Java unit tests)."""
import pytest

from conventions import names
from conventions.exceptions import InvalidParameter


@pytest.fixture(autouse=True)
def extended_mode(settings):
    settings.NORMALIZATION_MODE = "extended"


class SystemNameTests:
    @pytest.mark.parametrize("raw, normalized", [
        ("SystemName", "SystemName"),
        ("   SystemName    \n", "SystemName"),
        ("snake_case_system", "SnakeCaseSystem"),
        ("kebab-case-system", "KebabCaseSystem"),
        ("system with spaces", "SystemWithSpaces"),
        ("TOO____MUCH____UNDERSCORE", "TOOMUCHUNDERSCORE"),
        ("   \thorrible___---_- mixed\n---___system 9", "HorribleMixedSystem9"),
        ("sysop", "Sysop"),
        ("SYSOP", "SYSOP"),
        ("consumer1", "Consumer1"),
        ("inv@lid", "Inv@lid"),
        ("TEMPERATURE_CONSUMER", "TEMPERATURECONSUMER"),
        ("a", "A"),
    ])
    def test_it_normalizes_to_pascal_case(self, raw, normalized):
        assert names.normalize_system_name(raw) == normalized

    @pytest.mark.parametrize("raw", [None, "", "   ", "\t\n"])
    def test_it_normalizes_blank_to_none(self, raw):
        assert names.normalize_system_name(raw) is None

    @pytest.mark.parametrize("valid", ["SystemName", "SystemName9", "SystemWithURL", "A"])
    def test_it_accepts_valid_names(self, valid):
        assert names.validate_system_name(valid) == valid

    @pytest.mark.parametrize("invalid", [
        "MySystemIs$uper", "system_name", "system-name", "systemName", "2ndSystem",
        "VeryVeryVeryVeryVeryVeryVeryVeryVeryVeryVeryVeryVeryLongSystemName", "a", "",
    ])
    def test_it_rejects_invalid_names(self, invalid):
        with pytest.raises(InvalidParameter) as error:
            names.validate_system_name(invalid)
        assert error.value.message == (
            f"The specified system name does not match the naming convention: {invalid}"
        )

    def test_it_reports_a_missing_name_as_null(self):
        with pytest.raises(InvalidParameter, match="naming convention: null$"):
            names.system_name("   ")

    def test_it_allows_63_characters_at_most(self):
        assert names.validate_system_name("A" * 63)
        with pytest.raises(InvalidParameter):
            names.validate_system_name("A" * 64)

    def test_it_only_trims_in_simple_mode(self, settings):
        settings.NORMALIZATION_MODE = "simple"
        assert names.normalize_system_name("\tnot-valid-system   ") == "not-valid-system"
        with pytest.raises(InvalidParameter):
            names.system_name("\tnot-valid-system   ")


class ServiceDefinitionTests:
    @pytest.mark.parametrize("raw, normalized", [
        ("serviceDef", "serviceDef"),
        ("   serviceDef    \n", "serviceDef"),
        ("snake_case_service_def", "snakeCaseServiceDef"),
        ("kebab-case-service-def", "kebabCaseServiceDef"),
        ("service def with spaces", "serviceDefWithSpaces"),
        ("TOO____MUCH____UNDERSCORE", "tOOMUCHUNDERSCORE"),
        ("   \thorrible___---_- mixed\n---___service def9", "horribleMixedServiceDef9"),
        ("TemperatureInfo", "temperatureInfo"),
        ("inv@lid-service", "inv@lidService"),
    ])
    def test_it_normalizes_to_camel_case(self, raw, normalized):
        assert names.normalize_service_definition(raw) == normalized

    @pytest.mark.parametrize("valid", ["serviceDefinition", "serviceDefinition9",
                                       "serviceDefinitionURLUpdate", "a"])
    def test_it_accepts_valid_names(self, valid):
        assert names.validate_service_definition(valid) == valid

    @pytest.mark.parametrize("invalid", [
        "myServiceDefinitionIs$uper", "service_def", "service-def", "ServiceDefinition",
        "2ndServiceDefinition", "s" * 64,
    ])
    def test_it_rejects_invalid_names(self, invalid):
        with pytest.raises(InvalidParameter) as error:
            names.validate_service_definition(invalid)
        assert error.value.message == (
            "The specified service definition name does not match the naming convention: "
            f"{invalid}"
        )


class OperationTests:
    @pytest.mark.parametrize("raw, normalized", [
        ("UPPER-CASE-OP", "upper-case-op"),
        ("snake_case_op", "snake-case-op"),
        ("op with spaces", "op-with-spaces"),
        ("too____much____underscore", "too-much-underscore"),
        ("   \tHORRIBLE___---_- mixed\n---___op   9", "horrible-mixed-op-9"),
    ])
    def test_it_normalizes_to_kebab_case(self, raw, normalized):
        assert names.normalize_operation(raw) == normalized

    def test_it_only_trims_in_simple_mode(self, settings):
        settings.NORMALIZATION_MODE = "simple"
        assert names.normalize_operation("   my-op    \n") == "my-op"

    @pytest.mark.parametrize("valid", ["my-op", "my-op-9", "myop9", "m"])
    def test_it_accepts_valid_names(self, valid):
        assert names.validate_operation(valid) == valid

    @pytest.mark.parametrize("invalid", ["MY-OP", "my-op-is-$uper", "1st-op", "-my-op",
                                         "my-op-"])
    def test_it_rejects_invalid_names(self, invalid):
        with pytest.raises(InvalidParameter) as error:
            names.validate_operation(invalid)
        assert error.value.message == (
            f"The specified service operation name does not match the naming convention: {invalid}"
        )


class InterfaceTemplateTests:
    @pytest.mark.parametrize("raw, normalized", [
        ("UPPER_CASE_INTERFACE", "upper_case_interface"),
        ("kebab-case-interace", "kebab_case_interace"),
        ("interface with spaces", "interface_with_spaces"),
        ("   \tHORRIBLE___---_- mixed\n---___interface   9", "horrible_mixed_interface_9"),
    ])
    def test_it_normalizes_to_snake_case(self, raw, normalized):
        assert names.normalize_interface_template(raw) == normalized

    @pytest.mark.parametrize("valid", ["my_interface_template", "my_interface_template_9",
                                       "myinterfacetemplate9", "generic_https"])
    def test_it_accepts_valid_names(self, valid):
        assert names.validate_interface_template(valid) == valid

    @pytest.mark.parametrize("invalid", ["MY_INTERFACE_TEMPLATE", "_my_interface_template",
                                         "my_interface_template_", "1st_interface_template"])
    def test_it_rejects_invalid_names(self, invalid):
        with pytest.raises(InvalidParameter) as error:
            names.validate_interface_template(invalid)
        assert error.value.message == (
            "The specified interface template name does not match the naming convention: "
            f"{invalid}"
        )


class CaseHelperTests:
    def test_it_converts_snake_case_like_the_reference_helpers(self):
        assert names.snake_to_pascal("snake_case_URL") == "SnakeCaseURL"
        assert names.snake_to_pascal("SNAKE_CASE") == "SNAKECASE"
        assert names.snake_to_camel("SNAKE_CASE") == "sNAKECASE"
        assert names.snake_to_kebab("snake_case_URL") == "snake-case-url"
