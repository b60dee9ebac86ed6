"""Every thread and periodic job a process of this service starts, by kind of process, and the
functions that start them (issue 30; docs/operations.md, "Processes and their threads").

The kinds are those of the Procfile: web (the gunicorn master and its workers), worker (Celery
prefork children), beat (Celery beat) and the MQTT interface (`manage.py mqtt_api`). Their
hooks call this module: config/gunicorn.py's `when_ready`, `post_worker_init`, `worker_exit`
and `on_exit`, and Celery's `worker_process_init` (connected below; config/__init__.py
imports this module in every process, as it does config.celery), and the MQTT interface's
command (`mqtt_interface_start`).

Some threads start on first use and stay so (ON_FIRST_USE says why): a thread exists only in
the process that started it, so one started before gunicorn or Celery forks would not exist
in the workers, and most are needed only by some processes.

The functions import what they start when they are called: the gunicorn master calls them
before Django's apps are loaded, and every process imports this module.
"""
from dataclasses import dataclass
from typing import Any

from celery.signals import worker_process_init

# How long a web worker at exit waits for its pull snapshot thread (it may be loading).
SNAPSHOT_STOP_SECONDS = 1.0


@dataclass(frozen=True)
class Started:
    """One thread (or pool of threads) a process starts."""

    thread: str  # its name, as in a thread dump or the `thread` field of a JSON log line
    does: str
    lives_in: str
    when: str  # when it starts, and under which settings
    ends: str  # how it ends (a daemon thread ends with its process)


REGISTRATION = Started(
    "serviceregistry-registration",
    "registers this system and its services in the ServiceRegistry, retrying with backoff; "
    "the master revokes them at exit (`on_exit`)",
    "serviceregistry/registration.py", "gunicorn `when_ready`, with SERVICE_REGISTRY_URL; "
    "works once the first workers are forked",
    "when registered; daemon")
IN_PROCESS_BEAT = Started(
    "in-process-beat", "runs the periodic jobs (CELERY_BEAT_SCHEDULE) at their intervals",
    "config/scheduler.py", "gunicorn `post_worker_init`, only without a Celery broker",
    "daemon; stop_in_process_scheduler (tests)")
PULL_SNAPSHOT = Started(
    "pull-snapshot", "loads the pull snapshot, then reads the change feed every 5 s",
    "orchestration/snapshot/state.py", "at start with PULL_SNAPSHOT (see each kind); in any "
    "other process at its first pull that may read the snapshot",
    "snapshot_stop (a web worker's exit, the end of the test session); daemon")
MQTT_API_WORKERS = Started(
    "mqtt-api-<n>", "answer the requests taken from the broker (MQTT_API_THREADS of them); "
    "the command's main thread runs the broker connection's network loop",
    "mqtt_api/server.py", "when the command serves", "stopped by SIGTERM or SIGINT")

# The gunicorn master: once, however many workers serve.
WEB_MASTER: tuple[Started, ...] = (REGISTRATION,)
# Each gunicorn worker (besides gunicorn's own WEB_THREADS request threads).
WEB_WORKER: tuple[Started, ...] = (IN_PROCESS_BEAT, PULL_SNAPSHOT)
# Each Celery prefork child: subscription previews are answered from the snapshot.
WORKER: tuple[Started, ...] = (PULL_SNAPSHOT,)
# Celery beat starts no thread of ours: it enqueues CELERY_BEAT_SCHEDULE (periodic_jobs()).
BEAT: tuple[Started, ...] = ()
# `manage.py mqtt_api`: mqtt_interface_start, called by its command before it serves.
MQTT_INTERFACE: tuple[Started, ...] = (PULL_SNAPSHOT, MQTT_API_WORKERS)

# In whichever process first needs them, of any kind.
ON_FIRST_USE: tuple[Started, ...] = (
    Started("pull-job-writer", "writes the jobs of answered pulls in batches",
            "orchestration/history/job_writer.py",
            "the first pull whose job is written behind the answer: only processes that "
            "answer pulls need it",
            "never stops; daemon. job_writer_flush at a web worker's exit and at "
            "interpreter exit writes what is left"),
    Started("log-db-writer", "stores log records at LOG_DB_LEVEL in the database",
            "general/log_handler.py",
            "the first record to store: logging is configured before the fork and before "
            "the apps are ready; a forked child starts its own",
            "never stops; daemon. logging.shutdown flushes it"),
    Started("notify-http-deadlines", "shuts down the sockets of HTTP notification attempts "
            "at their deadlines", "notifications/http_connections.py",
            "the first HTTP notification attempt of the process", "never stops; daemon"),
    Started("notify-http_<n>, notify-mqtt_<n>", "send notifications without a broker "
            "(NOTIFY_HTTP_CONCURRENCY and 2 threads)", "notifications/inprocess.py",
            "the first delivery handed over in the process, only without a Celery broker",
            "at interpreter exit"),
    Started("heartbeat-<delivery>", "renews the claim of a delivery being sent",
            "notifications/heartbeat.py", "each send (one delivery, or an MQTT batch)",
            "when the send ends"),
    Started("paho network loop", "the broker connection notifications are published on",
            "notifications/mqtt_publishing.py", "the first MQTT publish of the process",
            "when the connection fails (the next publish opens another)"),
    Started("health_<n>", "the readiness checks, one thread each",
            "observability/health.py", "each readiness request", "when it is answered"),
    Started("latency-probe_<n>", "probe provider interfaces for their latency",
            "orchestration/pull/latency.py", "each run of the QoS probe (periodic job)",
            "when the run ends"),
)

PROCESSES: dict[str, tuple[Started, ...]] = {
    "web master": WEB_MASTER, "web worker": WEB_WORKER, "worker": WORKER, "beat": BEAT,
    "mqtt-interface": MQTT_INTERFACE,
}


def periodic_jobs() -> dict[str, str]:
    """Name → task of each periodic job: run by beat, or without a broker by the
    in-process-beat thread of each web worker (the list depends on the settings)."""
    from django.conf import settings

    return {name: entry["task"] for name, entry in settings.CELERY_BEAT_SCHEDULE.items()}


def web_master_start(server: Any) -> None:
    """gunicorn `when_ready`, in the master, once: WEB_MASTER."""
    from serviceregistry.registration import start_registration

    # Its thread starts working once the first workers are forked (WORKERS is filled by then).
    start_registration(server.log, ready=lambda: len(server.WORKERS) >= server.num_workers)


def web_master_stop() -> None:
    """gunicorn `on_exit`, after the workers stopped: revoke what was registered, within
    SERVICE_REGISTRY_REVOKE_SECONDS."""
    from serviceregistry.registration import revoke_registration

    revoke_registration()


def web_worker_start() -> None:
    """gunicorn `post_worker_init`, in each worker after the fork: WEB_WORKER."""
    from config.scheduler import start_in_process_scheduler
    from orchestration.snapshot.state import snapshot_start

    start_in_process_scheduler()
    snapshot_start()


def web_worker_stop() -> None:
    """gunicorn `worker_exit`, when a worker stops gracefully: the pull jobs it has not written
    yet are written, then its snapshot thread ends."""
    from orchestration.history.job_writer import job_writer_flush
    from orchestration.snapshot.state import snapshot_stop

    job_writer_flush()
    snapshot_stop(SNAPSHOT_STOP_SECONDS)


@worker_process_init.connect
def worker_child_start(**kwargs: Any) -> None:
    """Celery `worker_process_init`, in each prefork child: WORKER. Its pull snapshot loads
    in the background when the child starts, as in a web worker, so that the first change
    does not find it still unloaded (its previews would then read the database, several
    times slower)."""
    from orchestration.snapshot.state import snapshot_start

    snapshot_start()


def mqtt_interface_start() -> None:
    """`manage.py mqtt_api`, before it serves: the pull snapshot, so that pulls are answered
    from it as in a web worker (MQTT_API_WORKERS start with the server itself)."""
    from orchestration.snapshot.state import snapshot_start

    snapshot_start()
