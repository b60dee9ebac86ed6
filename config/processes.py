"""Every thread a process of this service starts, by kind of process (the Procfile's), and the
functions that start them; docs/operations.md, "Processes and their threads", says more. The
periodic jobs are CELERY_BEAT_SCHEDULE (config/settings.py): run by beat, or without a broker
by each web worker's in-process-beat thread.

- web master (gunicorn `when_ready`, `on_exit`): serviceregistry-registration
  (serviceregistry/registration.py), with SERVICE_REGISTRY_URL; daemon, revoked at exit.
- web worker (`post_worker_init`, `worker_exit`): in-process-beat (config/scheduler.py,
  only without a broker) and pull-snapshot (orchestration/snapshot/state.py, with
  PULL_SNAPSHOT; stopped at a worker's exit), besides gunicorn's WEB_THREADS.
- worker (Celery `worker_process_init`, each prefork child): pull-snapshot, for previews.
- beat: none of ours.
- MQTT interface (`mqtt_interface_start`): pull-snapshot; mqtt-api-<n> (mqtt_api/server.py,
  MQTT_API_THREADS) start with its server and stop on SIGTERM or SIGINT.

On first use, in any process (a thread started before gunicorn or Celery forks would not
exist in the workers, and most are needed only by some processes); all daemons:
pull-job-writer (orchestration/history/job_writer.py; flushed at a worker's and at
interpreter exit), log-db-writer (general/log_handler.py; flushed by logging.shutdown),
notify-http-deadlines (notifications/http_connections.py), notify-http_<n> (without a
broker) and notify-mqtt_<n> (notifications/inprocess.py; without a broker, or for a round's
own notifications; each keeps a database connection), heartbeat-<delivery> per send
(notifications/heartbeat.py), the paho network loop (notifications/mqtt_publishing.py, until
its connection fails), health_<n> per readiness request (observability/health.py) and
latency-probe_<n> per QoS probe run (orchestration/pull/latency.py).

config/__init__.py imports this module in every process (it connects the Celery signal). The
functions import what they start when called: the gunicorn master calls them before Django's
apps are loaded.
"""
from typing import Any

from celery.signals import task_postrun, task_prerun, worker_process_init

# How long a web worker at exit waits for its pull snapshot thread (it may be loading).
SNAPSHOT_STOP_SECONDS = 1.0


def web_master_start(server: Any) -> None:
    """gunicorn `when_ready`, in the master, once."""
    from serviceregistry.registration import start_registration

    # Its thread starts working once the first workers are forked (WORKERS is filled by then).
    start_registration(server.log, ready=lambda: len(server.WORKERS) >= server.num_workers)


def web_master_stop() -> None:
    """gunicorn `on_exit`, after the workers stopped: revoke what was registered, within
    SERVICE_REGISTRY_REVOKE_SECONDS."""
    from serviceregistry.registration import revoke_registration

    revoke_registration()


def web_worker_start(worker: Any) -> None:
    """gunicorn `post_worker_init`, in each worker after the fork."""
    from api.heap import heap_large_blocks_apart
    from config.scheduler import start_in_process_scheduler
    from orchestration.snapshot.state import snapshot_start

    heap_large_blocks_apart()
    start_in_process_scheduler()
    snapshot_start()


def web_worker_stop(server: Any, worker: Any) -> None:
    """gunicorn `worker_exit`, when a worker stops gracefully: the pull jobs it has not written
    yet are written, then its snapshot thread ends."""
    from orchestration.history.job_writer import job_writer_flush
    from orchestration.snapshot.state import snapshot_stop

    job_writer_flush()
    snapshot_stop(SNAPSHOT_STOP_SECONDS)


@worker_process_init.connect
def worker_child_start(**kwargs: Any) -> None:
    """Celery `worker_process_init`, in each prefork child: its pull snapshot loads in the
    background now, so that the first change does not find it unloaded (its previews would
    then read the database, several times slower). Its tasks count as requests in progress,
    between which the snapshot is frozen (orchestration/snapshot/state.py)."""
    from api.heap import heap_large_blocks_apart
    from api.requests_in_progress import work_began, work_ended
    from orchestration.snapshot.state import snapshot_start

    heap_large_blocks_apart()
    task_prerun.connect(work_began, dispatch_uid="config.processes.task_began")
    task_postrun.connect(work_ended, dispatch_uid="config.processes.task_ended")
    snapshot_start()


def mqtt_interface_start() -> None:
    """`manage.py mqtt_api`, before it serves: pulls are answered from the snapshot as in a
    web worker."""
    from api.heap import heap_large_blocks_apart
    from orchestration.snapshot.state import snapshot_start

    heap_large_blocks_apart()
    snapshot_start()
