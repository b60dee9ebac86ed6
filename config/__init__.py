from config.celery import app as celery_app
# The threads each kind of process starts; connects the Celery worker signals.
from config import processes  # noqa: F401

__all__ = ("celery_app",)
