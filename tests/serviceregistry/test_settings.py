"""The ServiceRegistry settings: invalid values stop the start, naming the variable."""
import os

import pytest

from tests.startup import assert_start_refused, started

# The server's settings read as it starts them; prints the address it registers.
SERVICE_ADDRESS_PRINTED = ("import config.gunicorn; from django.conf import settings; "
                           "print(settings.SERVICE_ADDRESS)")


@pytest.mark.parametrize("env, name", [
    ({"SERVICE_REGISTRY_URL": "ftp://127.0.0.1:8443"}, "SERVICE_REGISTRY_URL"),
    ({"SERVICE_REGISTRY_URL": "http://127.0.0.1:8443/serviceregistry"}, "SERVICE_REGISTRY_URL"),
    ({"SERVICE_REGISTRY_URL": "127.0.0.1:8443"}, "SERVICE_REGISTRY_URL"),
    ({"SERVICE_REGISTRY_URL": "http://127.0.0.1:8443", "AUTHENTICATION_POLICY": "certificate",
      "TLS_CERT_FILE": "c.pem", "TLS_KEY_FILE": "k.pem", "TLS_CA_FILE": "ca.pem"},
     "SERVICE_REGISTRY_URL must be https://"),
    ({"SERVICE_ADDRESS": "my host"}, "SERVICE_ADDRESS"),
    ({"SERVICE_REGISTRY_CACHE_SECONDS": "-1"}, "SERVICE_REGISTRY_CACHE_SECONDS"),
    ({"SERVICE_REGISTRY_TIMEOUT_SECONDS": "0"}, "SERVICE_REGISTRY_TIMEOUT_SECONDS"),
    ({"SERVICE_REGISTRY_REVOKE_SECONDS": "-2"}, "SERVICE_REGISTRY_REVOKE_SECONDS"),
    ({"SERVICE_REGISTRY_POLL_SECONDS": "0"}, "SERVICE_REGISTRY_POLL_SECONDS"),
    ({"SERVICE_REGISTRY_RETRY_MIN_SECONDS": "10", "SERVICE_REGISTRY_RETRY_MAX_SECONDS": "5"},
     "SERVICE_REGISTRY_RETRY_MAX_SECONDS"),
])
def test_an_invalid_service_registry_setting_stops_the_start(env, name):
    assert_start_refused("ImproperlyConfigured", name, code=SERVICE_ADDRESS_PRINTED, **env)


@pytest.mark.parametrize("env, address", [
    ({"HOST": "127.0.0.1"}, "127.0.0.1"),
    ({"HOST": "0.0.0.0"}, os.uname().nodename),
    ({"HOST": "0.0.0.0", "SERVICE_ADDRESS": "orchestrator.local"}, "orchestrator.local"),
])
def test_service_address_defaults_to_host_or_the_host_name(env, address):
    result = started(SERVICE_ADDRESS_PRINTED, **env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == address
