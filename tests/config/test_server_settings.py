"""The HTTP server's settings: invalid values stop the process at start-up, naming the variable."""
import pytest

from tests.startup import assert_start_refused


@pytest.mark.parametrize("name, value", [
    ("WEB_THREADS", "0"),
    ("SERVER_HEADER_TIMEOUT_SECONDS", "0"),
    ("SERVER_BODY_TIMEOUT_SECONDS", "-1"),
    ("SERVER_KEEPALIVE_SECONDS", "1.5"),
    ("SERVER_LIMIT_REQUEST_LINE", "9000"),
    ("SERVER_LIMIT_REQUEST_FIELDS", "40000"),
    ("SERVER_MAX_CONNECTIONS", "none"),
])
def test_an_invalid_server_setting_stops_the_start(name, value):
    assert_start_refused(name, code="import config.gunicorn", **{name: value})


def test_an_mqtt_budget_smaller_than_the_largest_request_stops_the_interface():
    assert_start_refused("MQTT_API_BUDGET_BYTES must be at least 2162688",
                         code="import django; django.setup(); "
                              "from mqtt_api.server import MqttApiServer; MqttApiServer()",
                         MQTT_API_BUDGET_BYTES="2097152", MAX_REQUEST_BODY_BYTES="2097152")
