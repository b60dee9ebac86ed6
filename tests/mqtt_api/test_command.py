"""`manage.py mqtt_api` refuses to start where it could not serve as configured."""
import pytest
from django.core.management import CommandError, call_command


@pytest.mark.parametrize("changes, message", [
    ({"MQTT_API_ENABLED": False}, "The MQTT interface is off: set MQTT_API_ENABLED=true"),
    ({"MQTT_BROKER_URL": ""}, "The MQTT interface needs MQTT_BROKER_URL"),
    ({"AUTHENTICATION_POLICY": "certificate", "MQTT_BROKER_URL": "mqtt://127.0.0.1:1883"},
     "The certificate policy over MQTT needs a TLS broker: MQTT_BROKER_URL=mqtts://…"),
])
def test_it_refuses_what_it_cannot_serve(settings, changes, message):
    settings.MQTT_API_ENABLED = True
    for name, value in changes.items():
        setattr(settings, name, value)
    with pytest.raises(CommandError) as refused:
        call_command("mqtt_api")
    assert str(refused.value) == message
