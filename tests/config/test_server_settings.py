"""The HTTP server's settings: invalid values stop the process at start-up, naming the variable."""
import os
import subprocess
import sys

import pytest

from tests.worker import ROOT


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
    result = subprocess.run(
        [sys.executable, "-c", "import config.gunicorn"], cwd=ROOT, capture_output=True,
        text=True, timeout=60, env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings",
                                    name: value})
    assert result.returncode != 0
    assert name in result.stderr
