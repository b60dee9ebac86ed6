"""The Celery application shared by the web process, workers and beat."""
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("serviceorchestration")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
