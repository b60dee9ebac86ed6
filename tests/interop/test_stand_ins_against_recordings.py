"""The stand-ins of the Arrowhead systems (tests/fake_*.py) answer as the official Java
systems answered in the recorded flows (tests/recordings/, tests/interop/exchanges.py):
each recording is replayed, request by request, against a fresh stand-in over real HTTP, and
every answer must be the recorded one, volatile values aside. CI runs no Java; this keeps the
stand-ins, and so every test that talks to them, on the real contract."""
import datetime as dt
import re

import pytest

from tests.fake_authentication import FakeAuthentication
from tests.fake_blacklist import FakeBlacklist
from tests.fake_consumer_authorization import FakeConsumerAuthorization
from tests.fake_service_registry import FakeServiceRegistry
from tests.interop.exchanges import differences, recording, recordings
from tests.interop.record import CONSUMER, PASSWORD, US

STAND_INS = {"Authentication": lambda: FakeAuthentication({US: PASSWORD, CONSUMER: PASSWORD}),
             "ServiceRegistry": FakeServiceRegistry,
             "ConsumerAuthorization": FakeConsumerAuthorization,
             "Blacklist": FakeBlacklist}


def test_every_system_the_service_talks_to_has_a_recording():
    assert {recording(path).system for path in recordings()} == set(STAND_INS)


@pytest.mark.parametrize("path", recordings(), ids=lambda path: path.stem)
def test_the_stand_in_answers_as_the_recorded_system(path):
    recorded = recording(path)
    stand_in = STAND_INS[recorded.system]()
    try:
        assert differences(stand_in.url, recorded) == []
    finally:
        stand_in.stop()


def _instants(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from _instants(item)
    elif isinstance(value, list):
        for item in value:
            yield from _instants(item)
    elif isinstance(value, str) and re.fullmatch(r"\d{4}-\d\d-\d\dT[\d:.]+Z", value):
        yield dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


def test_no_recorded_request_carries_an_instant_that_has_passed():
    # A replay must not depend on the day it runs (an expiry in the past is refused).
    now = dt.datetime.now(dt.timezone.utc)
    past = [(path.stem, exchange.note) for path in recordings()
            for exchange in recording(path).exchanges
            if any(instant <= now for instant in _instants(exchange.body))]
    assert past == []
