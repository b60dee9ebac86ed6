import io
import uuid
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.endpoints import broker_state_directory, mosquitto
from tests.mqtt_api.clients import SHARED
from tests.factories import make_instances, make_rules
from tests.ports import reserved_port
from tests.store.helpers import instance_body


@pytest.fixture
def catalog():
    """One instance, `SHARED`, and Car1's rule to it."""
    make_instances(instance_body("Shared", metadata={"v": 1}))
    make_rules(("Car1", SHARED, 1))


@pytest.fixture(scope="module")
def cloud_certificates():
    """`make_certificates` output readable by a Mosquitto started as root (which reads as its
    own user): this service's certificate, the broker's (`Broker`), systems of the local cloud
    (`Car1`, the operator `Sysop`, the device `Gadget`), `Stranger` of another cloud under the
    same CA, and `Impostor` (in `untrusted/`) of another CA."""
    with broker_state_directory() as directory:
        call_command("make_certificates", str(directory), "--system", "Broker",
                     "--system", "Car1", "--system", "Sysop:op", "--system", "Gadget:de",
                     stdout=io.StringIO())
        call_command("make_certificates", str(directory), "--cloud", "OtherCloud",
                     "--server", "Unused", "--system", "Stranger", stdout=io.StringIO())
        call_command("make_certificates", str(directory / "untrusted"), "--system", "Impostor",
                     stdout=io.StringIO())
        for path in Path(directory).rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        yield Path(directory)


@pytest.fixture
def base() -> str:
    """A base topic of the test's own, so that tests sharing a broker do not meet."""
    return f"test/so-{uuid.uuid4().hex[:8]}/"


@pytest.fixture
def broker():
    """A throw-away Mosquitto of the test's own (anonymous clients): (its port, its process)."""
    port = reserved_port()
    with mosquitto(port) as process:
        yield port, process
