"""The README's quick start, pasted as a user would: its shell block runs against the real
service (`make run`'s embedded defaults, the real Mosquitto) and does what the README says."""
import json
import os
import re
import signal
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.concurrency import wait_until
from tests.services import mqtt_broker
from tests.web_server import gunicorn
from tests.worker import ROOT

pytestmark = pytest.mark.django_db(transaction=True)

LISTENER = "mosquitto_sub -h 127.0.0.1 -t plant/temperature-consumer &"


def quick_start_block() -> str:
    readme = (Path(ROOT) / "README.md").read_text()
    section = readme.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    [block] = re.findall(r"```sh\n(.*?)```", section, re.S)
    return block


def test_the_quick_start_works_when_pasted(tmp_path):
    block = quick_start_block()
    assert "SO=http://127.0.0.1:8465/serviceorchestration" in block and LISTENER in block
    topic, listened = f"test/quick-start/{uuid.uuid4().hex}", tmp_path / "listener.out"
    broker_host, broker_port = mqtt_broker()  # the README's is the default; the run's may differ
    listener = LISTENER.replace("-h 127.0.0.1", f"-h {broker_host} -p {broker_port}")
    with gunicorn({"CELERY_BROKER_URL": ""}, tmp_path / "gunicorn.log") as port:
        script = (block.replace("127.0.0.1:8465", f"127.0.0.1:{port}")
                  .replace(LISTENER, f"{listener[:-2]} > {listened} &")
                  .replace("plant/temperature-consumer", topic))
        printed = tmp_path / "shell.out"
        with printed.open("w") as out:  # a file: the listener the block leaves running keeps it
            shell = subprocess.Popen(["bash", "-e", "-c", script], stdout=out,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        try:
            shell.wait(timeout=60)
            wait_until(lambda: listened.read_text().count("\n") >= 2, timeout=20)
        finally:
            os.killpg(shell.pid, signal.SIGTERM)  # the listener the block left running
    output = printed.read_text()
    assert shell.returncode == 0, output
    assert "errorCode" not in output, output
    answers = _json_values(output)
    created, rule, pulled = answers[:3]
    assert created["entries"][0]["instanceId"] == "TemperatureProvider|temperatureInfo|1.0.0"
    assert rule["entries"][0]["consumer"] == "TemperatureConsumer"
    [result] = pulled["results"]
    assert result["interfaces"][0]["properties"]["accessPort"] == 8080
    assert re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-", output)  # the subscription id
    pushes = [json.loads(line) for line in listened.read_text().splitlines()]
    assert [p["payload"]["results"][0]["metadata"]["unit"] for p in pushes] == [
        "celsius", "kelvin"]
    assert {p["receiver"] for p in pushes} == {"TemperatureConsumer"}


def _json_values(text: str) -> list:
    """The JSON answers curl printed one after another (without newlines between them)."""
    decoder, values, index = json.JSONDecoder(), [], 0
    while (start := text.find("{", index)) != -1:
        value, index = decoder.raw_decode(text, start)
        values.append(value)
    return values
