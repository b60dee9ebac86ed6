"""gunicorn configuration (`gunicorn --config python:config.gunicorn config.wsgi`), taken from
the Django settings (HOST, PORT, WEB_CONCURRENCY) so that the service has one source of
configuration."""
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from django.conf import settings  # noqa: E402

bind = [f"{settings.HOST}:{settings.PORT}"]
workers = settings.WEB_CONCURRENCY
accesslog = "-"


def post_worker_init(worker) -> None:
    """Without a Celery broker (`make run` defaults) nothing else runs the periodic tasks
    (expiry, notification retries): run them in a thread of each web worker."""
    from notifications.scheduler import start_in_process_scheduler

    start_in_process_scheduler()
