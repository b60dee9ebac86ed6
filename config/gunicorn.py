"""gunicorn configuration (`gunicorn --config python:config.gunicorn config.wsgi`), taken from
the Django settings (HOST, PORT, WEB_CONCURRENCY) so that the service has one source of
configuration."""
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from django.conf import settings  # noqa: E402

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


def post_worker_init(worker) -> None:
    """Without a Celery broker (`make run` defaults) nothing else runs the periodic tasks
    (expiry, notification retries): run them in a thread of each web worker. Each worker loads
    its pull snapshot in the background (orchestration/snapshot.py)."""
    from config.scheduler import start_in_process_scheduler
    from orchestration.snapshot import snapshot_start

    start_in_process_scheduler()
    snapshot_start()


def worker_exit(server, worker) -> None:
    """A worker stopping gracefully writes the pull jobs it has not written yet
    (orchestration/job_writer.py)."""
    from orchestration.job_writer import job_writer_flush

    job_writer_flush()


def when_ready(server) -> None:
    """In the master, once: register in the ServiceRegistry in a background thread (nothing
    without SERVICE_REGISTRY_URL; docs/local-cloud.md)."""
    from serviceregistry.registration import start_registration

    # Its thread starts working once the first workers are forked (WORKERS is filled by then).
    start_registration(server.log, ready=lambda: len(server.WORKERS) >= server.num_workers)


def on_exit(server) -> None:
    """In the master, after the workers stopped (SIGTERM, SIGINT): revoke what was registered,
    within SERVICE_REGISTRY_REVOKE_SECONDS."""
    from serviceregistry.registration import revoke_registration

    revoke_registration()
