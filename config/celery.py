"""The Celery application shared by the web process, workers and beat. What a worker's
processes start (its `worker_process_init`): config/processes.py."""
import os

from celery import Celery
from celery.signals import task_postrun, task_prerun
from django.db import close_old_connections

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("serviceorchestration")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Celery's Django fix-up closes every database connection before and after each task unless
# this is set (then it closes them every this-many tasks, counting both); a new connection
# per task was a sixth of a send task's time (docs/performance.md, push fan-out). Instead a
# worker keeps its connection as a web process does: `_connections_check` below closes it
# when it is broken or older than CONN_MAX_AGE, and CONN_HEALTH_CHECKS has a connection kept
# from an earlier task checked before it is used again (a backend restarted between tasks
# then costs a reconnect, not a failed task).
app.conf.CELERY_DB_REUSE_MAX = 1000
app.autodiscover_tasks()


@task_prerun.connect
@task_postrun.connect
def _connections_check(sender=None, **kwargs) -> None:  # noqa: ANN001 - Celery's signature
    """What Django does around a request: drop connections that errored or outlived
    CONN_MAX_AGE. Not for a task run eagerly inside a caller (its transaction is open)."""
    if sender is not None and not getattr(sender.request, "is_eager", False):
        close_old_connections()

