"""The stand-ins of the Arrowhead systems (tests/fake_*.py) answer as the official Java
systems answered in the recorded flows (tests/recordings/, tests/interop/exchanges.py):
each recording is replayed, request by request, against a fresh stand-in over real HTTP, and
every answer must be the recorded one, volatile values aside. CI runs no Java; this keeps the
stand-ins, and so every test that talks to them, on the real contract."""
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
