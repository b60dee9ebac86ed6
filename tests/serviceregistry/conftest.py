import pytest

from serviceregistry import client, instances, peers
from tests.fake_service_registry import FakeServiceRegistry


@pytest.fixture
def registry(settings):
    """A fake ServiceRegistry configured as ours, with the client's opener and the instance
    cache cleared around the test (test_client.py has its own, simpler one)."""
    fake = FakeServiceRegistry()
    settings.SERVICE_REGISTRY_URL = fake.url
    settings.SERVICE_REGISTRY_CACHE_SECONDS = 10
    peers.opener.cache_clear()
    instances.cache_clear()
    yield fake
    fake.stop()
    instances.cache_clear()
