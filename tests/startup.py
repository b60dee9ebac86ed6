"""The service's Django started in a process of its own, with some environment: how the tests
check what a setting does at start-up (an invalid one stops the start, naming itself)."""
import os
import subprocess
import sys

from tests.worker import ROOT

DJANGO_SETUP = "import django; django.setup()"


def started(code: str = DJANGO_SETUP, **env: str) -> subprocess.CompletedProcess:
    """`python -c code` in the project with `env` over this process's environment."""
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", **env})


def assert_start_refused(*expected: str, code: str = DJANGO_SETUP, **env: str) -> None:
    """Starting with `env` fails, and its error output says each of `expected`."""
    result = started(code, **env)
    assert result.returncode != 0, result.stdout
    for text in expected:
        assert text in result.stderr, result.stderr
