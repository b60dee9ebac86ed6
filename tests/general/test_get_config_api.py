import re
from pathlib import Path

import pytest
from django.conf import settings

from general.config_keys import PUBLIC_KEYS
from tests.factories import grant
from tests.general.helpers import GET_CONFIG
from tests.helpers import SYSOP, as_system, assert_error, assert_forbidden

pytestmark = pytest.mark.django_db

ORIGIN = f"GET {GET_CONFIG}"
REFERENCE_PUBLIC_KEYS = {
    "server.address", "server.port", "mqtt.api.enabled", "domain.name", "authentication.policy",
    "enable.management.filter", "management.policy", "enable.blacklist.filter",
    "force.blacklist.filter", "allow.self.addressing", "allow.non.routable.addressing",
    "max.page.size", "normalization.mode", "service.address.alias"}
OUR_PUBLIC_KEYS = {"application.version"}


def get_config(api, query: str, headers=SYSOP):
    return api.get(f"{GET_CONFIG}{query}", **headers)


def config_map(response) -> dict:
    assert response.status_code == 200, response.content
    assert set(response.json()) == {"map"}
    return response.json()["map"]


def every_key() -> str:
    return "?" + "&".join(f"keys={key}" for key in sorted(REFERENCE_PUBLIC_KEYS))


class GetConfigApiTests:
    def test_it_answers_public_keys_and_leaves_out_secrets(self, api):
        # reference-simple §13.11 G2
        response = get_config(api, "?keys=server.port&keys=normalization.mode"
                                   "&keys=spring.datasource.password")
        assert response.json() == {"map": {"server.port": "8465",
                                           "normalization.mode": "extended"}}

    def test_it_answers_the_default_page_size(self, api):
        # reference-simple §13.11 G3
        assert config_map(get_config(api, "?keys=max.page.size")) == {"max.page.size": "1000"}

    def test_it_knows_exactly_the_reference_public_keys_and_ours(self):
        assert set(PUBLIC_KEYS) == REFERENCE_PUBLIC_KEYS | OUR_PUBLIC_KEYS

    def test_it_answers_the_release_from_the_version_file(self, api):
        release = (Path(settings.BASE_DIR) / "VERSION").read_text().strip()
        assert re.fullmatch(r"\d+\.\d+\.\d+", release)
        assert config_map(get_config(api, "?keys=application.version")) == {
            "application.version": release}

    def test_it_answers_every_public_key_with_the_defaults(self, api):
        assert config_map(get_config(api, every_key())) == {
            "server.address": "127.0.0.1", "server.port": "8465", "mqtt.api.enabled": "false",
            "domain.name": "127.0.0.1", "authentication.policy": "declared",
            "enable.management.filter": "true", "management.policy": "permission",
            "enable.blacklist.filter": "false", "force.blacklist.filter": "true",
            "allow.self.addressing": "true", "allow.non.routable.addressing": "true",
            "max.page.size": "1000", "normalization.mode": "extended",
            "service.address.alias": ""}

    def test_it_reads_the_current_settings(self, api, settings):
        settings.HOST, settings.PORT, settings.MAX_PAGE_SIZE = "0.0.0.0", 9000, 50
        settings.MANAGEMENT_POLICY, settings.NORMALIZATION_MODE = "sysop-only", "simple"
        values = config_map(get_config(api, every_key()))
        assert {key: values[key] for key in ("server.address", "server.port", "domain.name",
                                             "max.page.size", "management.policy",
                                             "normalization.mode")} == {
            # domain.name is SERVICE_ADDRESS, resolved from HOST at start-up (docs/local-cloud.md)
            "server.address": "0.0.0.0", "server.port": "9000",
            "domain.name": settings.SERVICE_ADDRESS,
            "max.page.size": "50", "management.policy": "sysop-only",
            "normalization.mode": "simple"}

    def test_it_picks_up_settings_this_service_does_not_have_yet(self, api, settings):
        settings.MQTT_API_ENABLED, settings.SERVICE_ADDRESS = True, "orchestrator.local"
        settings.BLACKLIST_FILTER, settings.BLACKLIST_FORCE = True, False
        settings.SERVICE_ADDRESS_ALIAS = ["orch", "orchestrator"]
        values = config_map(get_config(api, every_key()))
        assert values["mqtt.api.enabled"] == "true"
        assert values["domain.name"] == "orchestrator.local"
        assert values["enable.blacklist.filter"] == "true"
        assert values["force.blacklist.filter"] == "false"
        assert values["service.address.alias"] == "orch,orchestrator"

    def test_it_never_answers_secrets(self, api, settings):
        settings.AUTHENTICATION_PASSWORD = "hunter2"
        secrets = ["SECRET_KEY", "secret.key", "DATABASE_URL", "spring.datasource.password",
                   "AUTHENTICATION_PASSWORD", "authenticator.credentials", "mqtt.client.password",
                   "MQTT_BROKER_URL", "server.ssl.key-store-password", "HOST", "PORT"]
        response = get_config(api, "?" + "&".join(f"keys={key}" for key in secrets))
        assert config_map(response) == {}
        assert b"hunter2" not in response.content
        assert settings.SECRET_KEY.encode() not in response.content

    def test_it_trims_and_deduplicates_keys_and_splits_commas(self, api):
        response = get_config(api, "?keys=%20server.port%20&keys=server.port"
                                   "&keys=max.page.size,%20normalization.mode")
        assert list(config_map(response)) == ["server.port", "max.page.size",
                                              "normalization.mode"]

    def test_it_matches_keys_exactly(self, api):
        assert config_map(get_config(api, "?keys=SERVER.PORT&keys=server")) == {}

    @pytest.mark.parametrize("query", ["", "?keys=", "?other=server.port"])
    def test_it_refuses_a_missing_or_empty_key_list(self, api, query):
        # reference-simple §13.11 G1
        assert_error(get_config(api, query), 400, "INVALID_PARAMETER",
                     "The list of the requested configuration keys is null or empty", ORIGIN)

    @pytest.mark.parametrize("query", ["?keys=server.port&keys=", "?keys=%20%20",
                                       "?keys=server.port,,max.page.size", "?keys=a,"])
    def test_it_refuses_a_blank_key(self, api, query):
        assert_error(get_config(api, query), 400, "INVALID_PARAMETER",
                     "The list of the requested configuration keys contains a null or empty "
                     "value", ORIGIN)

    def test_it_bounds_the_number_of_keys(self, api, settings):
        settings.MAX_LIST_LENGTH = 3
        assert get_config(api, "?keys=a&keys=b&keys=c").status_code == 200
        assert_error(get_config(api, "?keys=a&keys=b&keys=c&keys=d"), 400, "INVALID_PARAMETER",
                     "keys: Ensure this parameter has no more than 3 values.", ORIGIN)

    def test_it_refuses_a_system_without_management_permission(self, api, settings):
        settings.MANAGEMENT_POLICY = "sysop-only"
        assert_forbidden(get_config(api, "?keys=server.port", headers=as_system("Manager")),
                         ORIGIN)

    def test_it_is_granted_by_its_own_permission(self, api, settings):
        settings.MANAGEMENT_POLICY = "permission"
        grant("ConfigReader", "view_config")
        grant("LogReader", "general.view_logentry")
        assert get_config(api, "?keys=server.port", as_system("ConfigReader")).status_code == 200
        assert get_config(api, "?keys=server.port", as_system("LogReader")).status_code == 403
