"""gunicorn configuration (`gunicorn --config python:config.gunicorn config.wsgi`): binds to the
HOST and PORT settings so that the service has one source of configuration."""
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from django.conf import settings  # noqa: E402

bind = [f"{settings.HOST}:{settings.PORT}"]
accesslog = "-"
