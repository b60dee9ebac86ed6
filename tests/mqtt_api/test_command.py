"""`manage.py mqtt_api` refuses to start where it could not serve as configured, or where
the declared policy would let anyone who reaches the broker claim any name (issue 29, item 3),
and names the identity policy in force when it starts."""
import io
import logging
import os
import subprocess
import sys
import uuid
from urllib.parse import urlsplit

import pytest
from django.core.management import CommandError, call_command

from mqtt_api.management.commands import mqtt_api as command
from tests.mqtt_api.clients import Api
from tests.worker import ROOT

# Requests come from whoever can publish on the broker: declared there names anyone Sysop.
DECLARED_ON_NETWORK = (
    "Refusing to start: AUTHENTICATION_POLICY=declared on the non-loopback address "
    "mqtt://192.0.2.1:1883 lets anyone who reaches it claim any system name, Sysop included. "
    "Use AUTHENTICATION_POLICY=token or certificate (docs/identity.md), or set "
    "IDENTITY_DECLARED_ON_NETWORK=true if only trusted systems can reach mqtt://192.0.2.1:1883 "
    "(unsafe)")


class _Unconnected:
    """Stands in for the server, so that a start that should have been refused does not
    connect anywhere (the tests connect to loopback only) but returns, and fails the test."""

    def serve_forever(self) -> None:
        pass

    def stop(self) -> None:
        pass


@pytest.fixture
def unconnected(monkeypatch) -> None:
    monkeypatch.setattr(command, "MqttApiServer", _Unconnected)
    monkeypatch.setattr(command, "mqtt_interface_start", lambda: None)


@pytest.mark.parametrize("changes, message", [
    ({"MQTT_API_ENABLED": False}, "The MQTT interface is off: set MQTT_API_ENABLED=true"),
    ({"MQTT_BROKER_URL": ""}, "The MQTT interface needs MQTT_BROKER_URL"),
    ({"AUTHENTICATION_POLICY": "certificate", "MQTT_BROKER_URL": "mqtt://127.0.0.1:1883"},
     "The certificate policy over MQTT needs a TLS broker: MQTT_BROKER_URL=mqtts://…"),
    ({"MQTT_BROKER_URL": "http://127.0.0.1:1883"},
     "Invalid MQTT_BROKER_URL: expected mqtt://host:port or mqtts://host:port"),
    ({"AUTHENTICATION_POLICY": "declared", "IDENTITY_DECLARED_ON_NETWORK": False,
      "MQTT_BROKER_URL": "mqtt://192.0.2.1:1883"}, DECLARED_ON_NETWORK),
])
def test_it_refuses_what_it_cannot_serve(settings, unconnected, changes, message):
    settings.MQTT_API_ENABLED = True
    for name, value in changes.items():
        setattr(settings, name, value)
    with pytest.raises(CommandError) as refused:
        call_command("mqtt_api", stdout=io.StringIO())
    assert str(refused.value) == message


# `manage.py mqtt_api` with the server stood in for, as above.
UNCONNECTED_COMMAND = """
import django, sys
from django.core.management import execute_from_command_line
django.setup()
from mqtt_api.management.commands import mqtt_api
from tests.mqtt_api.test_command import _Unconnected
mqtt_api.MqttApiServer, mqtt_api.mqtt_interface_start = _Unconnected, lambda: None
execute_from_command_line(["manage.py", "mqtt_api"])
"""


def test_it_exits_non_zero_with_one_line_for_declared_on_a_network_broker():
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings",
                   "MQTT_API_ENABLED": "true", "AUTHENTICATION_POLICY": "declared",
                   "MQTT_BROKER_URL": "mqtt://192.0.2.1:1883"}
    environment.pop("IDENTITY_DECLARED_ON_NETWORK", None)
    result = subprocess.run([sys.executable, "-c", UNCONNECTED_COMMAND], cwd=ROOT,
                            env=environment, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result.stdout
    assert result.stderr.strip() == f"CommandError: {DECLARED_ON_NETWORK}"


@pytest.mark.django_db  # the WARNING is also stored for the logs query
def test_the_setting_lets_declared_start_on_a_network_broker_with_a_warning(
        settings, unconnected, caplog):
    settings.MQTT_API_ENABLED, settings.AUTHENTICATION_POLICY = True, "declared"
    settings.IDENTITY_DECLARED_ON_NETWORK = True
    settings.MQTT_BROKER_URL = "mqtt://192.0.2.1:1883"
    with caplog.at_level(logging.INFO, logger="mqtt_api"):
        call_command("mqtt_api", stdout=io.StringIO())
    assert [(record.levelno, record.getMessage()) for record in caplog.records
            if record.name == "mqtt_api"] == [(logging.WARNING, (
                "Identity policy: declared (callers name themselves; for closed networks and "
                "development only); on the non-loopback address mqtt://192.0.2.1:1883, allowed "
                "by IDENTITY_DECLARED_ON_NETWORK=true: anyone who reaches it can claim any "
                "system name"))]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("policy, named", [
    ("declared", "INFO [-] mqtt_api: Identity policy: declared (callers name themselves; for "
                 "closed networks and development only)\n"),
    ("token", "INFO [-] mqtt_api: Identity policy: token (identity tokens issued by this "
              "service)\n"),
])
def test_it_starts_on_a_loopback_broker_and_names_the_policy_in_force(settings, tmp_path,
                                                                      policy, named):
    port = urlsplit(settings.MQTT_BROKER_URL).port or 1883
    api = Api(port, f"test/so-{uuid.uuid4().hex[:8]}/", tmp_path / "api.log",
              AUTHENTICATION_POLICY=policy, IDENTITY_DECLARED_ON_NETWORK="false",
              LOG_FORMAT="plain")
    api.stop()
    assert named in api.log.read_text()
