"""notifications/handover.py hands deliveries to the send tasks by name: every process that
may create a delivery, a web process included, must have them registered (the single
delivery's name too: tasks a previous version queued under it still run)."""
import subprocess
import sys

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
