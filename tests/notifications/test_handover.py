"""notifications/handover.py hands deliveries to the send tasks by name: every process that
may create a delivery, a web process included, must have them registered (the single
delivery's name too: tasks a previous version queued under it still run)."""
import subprocess
import sys
import uuid

from celery import current_app

from notifications.handover import (
    DELIVER_BATCH_TASK,
    DELIVERY_BATCH,
    deliveries_enqueue,
    handover_groups,
)
from tests.worker import ROOT

CHECK = """
import os
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import config.wsgi  # what gunicorn loads: Django set up, nothing else imported
from celery import current_app
print(sorted(name for name in ("notifications.deliver", "notifications.deliver_batch")
             if name in current_app.tasks))
"""


def test_a_web_process_has_the_send_tasks_registered() -> None:
    result = subprocess.run([sys.executable, "-c", CHECK], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "['notifications.deliver', 'notifications.deliver_batch']"


class HandoverTests:
    """Each transport's deliveries go to the one send task on the transport's own queue:
    MQTT ones DELIVERY_BATCH a task, HTTP ones alone."""

    def test_groups_are_mqtt_batches_and_single_http_ones(self):
        mqtt = [(uuid.uuid4(), "MQTT") for _ in range(DELIVERY_BATCH + 1)]
        http = [(uuid.uuid4(), "HTTPS"), (uuid.uuid4(), "HTTP")]
        groups = handover_groups(mqtt[:1] + http + mqtt[1:])
        assert [(len(ids), protocol) for ids, protocol in groups] == [
            (DELIVERY_BATCH, "MQTT"), (1, "MQTT"), (1, "HTTPS"), (1, "HTTP")]
        assert [ids[0] for ids, _ in groups[2:]] == [http[0][0], http[1][0]]

    def test_each_group_goes_to_the_queue_of_its_transport(self, settings, monkeypatch):
        settings.CELERY_TASK_ALWAYS_EAGER = False
        sent = []
        monkeypatch.setattr(current_app.tasks[DELIVER_BATCH_TASK], "apply_async",
                            lambda **kwargs: sent.append(kwargs))
        http, mqtt = uuid.uuid4(), uuid.uuid4()
        assert deliveries_enqueue(delivery_ids=[http], protocol="HTTPS", countdown=3)
        assert deliveries_enqueue(delivery_ids=[mqtt], protocol="MQTT")
        default = current_app.conf.task_default_queue
        assert sent == [
            {"args": [[str(http)]], "queue": f"{default}.http", "countdown": 3},
            {"args": [[str(mqtt)]], "queue": f"{default}.mqtt", "countdown": None}]
