"""gunicorn configuration (`gunicorn --config python:config.gunicorn config.wsgi`), taken from
the Django settings (HOST, PORT, WEB_CONCURRENCY) so that the service has one source of
configuration."""
import os
import sys

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from django.conf import settings  # noqa: E402

from config import processes  # noqa: E402

bind = [f"{settings.HOST}:{settings.PORT}"]
# Threaded workers with read deadlines: slow clients cannot hold the server (docs/performance.md).
worker_class = "config.workers.ServiceWorker"
workers = settings.WEB_CONCURRENCY
threads = settings.WEB_THREADS
worker_connections = settings.SERVER_MAX_CONNECTIONS
keepalive = settings.SERVER_KEEPALIVE_SECONDS
graceful_timeout = settings.SERVER_GRACEFUL_TIMEOUT_SECONDS
limit_request_line = settings.SERVER_LIMIT_REQUEST_LINE
limit_request_fields = settings.SERVER_LIMIT_REQUEST_FIELDS
limit_request_field_size = settings.SERVER_LIMIT_REQUEST_FIELD_SIZE
accesslog = "-"
if settings.LOG_FORMAT == "json":  # gunicorn's own lines (start, workers, access) as JSON too
    logconfig_dict = {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": "observability.log_records.JsonFormatter"}},
        "handlers": {
            "error_console": {"class": "logging.StreamHandler", "formatter": "json",
                              "stream": "ext://sys.stderr"},
            "console": {"class": "logging.StreamHandler", "formatter": "json",
                        "stream": "ext://sys.stdout"},
        },
        "loggers": {
            "gunicorn.error": {"level": "INFO", "handlers": ["error_console"],
                               "propagate": False},
            "gunicorn.access": {"level": "INFO", "handlers": ["console"],
                                "propagate": False},
        },
    }
# gunicorn's control socket sits at one path per user ($HOME/.gunicorn/gunicorn.ctl): several
# services on one host would take it from each other, and nothing here uses it.
control_socket_disable = True

if settings.TLS_CERT_FILE:  # generic_https
    import ssl

    certfile, keyfile = settings.TLS_CERT_FILE, settings.TLS_KEY_FILE
    if settings.TLS_CA_FILE:
        # Ask for a client certificate and verify it against the CA; a client without one
        # still gets an HTTP answer (echo, or 401 under the certificate policy).
        ca_certs = settings.TLS_CA_FILE
        cert_reqs = ssl.CERT_OPTIONAL


def on_starting(server) -> None:
    """In the master, before it binds anything: the TLS files must be readable; the identity
    policy must fit the addresses it will listen on, `--bind` included (identity/exposure.py),
    and is named in the log; the metrics of the previous run's processes go
    (observability/metrics_files.py)."""
    from identity.exposure import declared_refusal, policy_record

    for name in ("TLS_CERT_FILE", "TLS_KEY_FILE", "TLS_CA_FILE"):
        # e.g. compose's ./certs left empty: say which file, not a traceback from the socket.
        if (path := getattr(settings, name)) and not os.access(path, os.R_OK):
            server.log.error(f"Refusing to start: {name}={path} is not a readable file "
                             "(HTTPS; docs/operations.md, Secure production setup)")
            sys.exit(1)
    for address in server.cfg.address:
        shown, host = _listening(address)
        if refusal := declared_refusal(shown, host):
            server.log.error(refusal)
            sys.exit(1)
        level, line = policy_record(shown, host)
        server.log.log(level, line)
    if settings.METRICS_DIR:
        from observability.metrics_files import metrics_files_prune

        metrics_files_prune(settings.METRICS_DIR)


def _listening(address: tuple[str, int] | str | int) -> tuple[str, str]:
    """A bound address as shown in the log, and its host: a Unix socket is reached from this
    machine only (its host is `localhost`); an inherited file descriptor could be anything."""
    if isinstance(address, tuple):
        host, port = address[0], address[1]
        return (f"[{host}]:{port}" if ":" in host else f"{host}:{port}"), host
    if isinstance(address, int):
        return f"fd://{address}", ""
    return f"unix:{address}", "localhost"


def child_exit(server, worker) -> None:
    """In the master, after a worker exited (observability/metrics_files.py)."""
    if settings.METRICS_DIR:
        from observability.metrics_files import metrics_process_dead

        metrics_process_dead(settings.METRICS_DIR, worker.pid)


def post_worker_init(worker) -> None:
    """In each worker after the fork, what config/processes.py lists for a web worker: without
    a Celery broker (`make run` defaults) a thread runs the periodic tasks (expiry,
    notification retries); the pull snapshot loads in the background."""
    processes.web_worker_start()


def worker_exit(server, worker) -> None:
    """A worker stopping gracefully writes the pull jobs it has not written yet
    (orchestration/history/job_writer.py) and ends its snapshot thread (config/processes.py)."""
    processes.web_worker_stop()


def when_ready(server) -> None:
    """In the master, once: register in the ServiceRegistry in a background thread (nothing
    without SERVICE_REGISTRY_URL; docs/local-cloud.md; config/processes.py)."""
    processes.web_master_start(server)


def on_exit(server) -> None:
    """In the master, after the workers stopped (SIGTERM, SIGINT): revoke what was registered,
    within SERVICE_REGISTRY_REVOKE_SECONDS."""
    processes.web_master_stop()
