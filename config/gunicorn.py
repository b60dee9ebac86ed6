"""gunicorn configuration (`gunicorn --config python:config.gunicorn config.wsgi`), taken from
the Django settings (HOST, PORT, WEB_CONCURRENCY) so that the service has one source of
configuration."""
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from django.conf import settings  # noqa: E402

bind = [f"{settings.HOST}:{settings.PORT}"]
workers = settings.WEB_CONCURRENCY
accesslog = "-"
