"""gunicorn configuration (`gunicorn --config python:config.gunicorn config.wsgi`), taken from
the Django settings so that the service has one source of configuration. gunicorn's stock
threaded worker listens on a Unix socket behind nginx, which the master runs on HOST:PORT
(config/front.py; docs/performance.md says why)."""
import os
import signal
import sys

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from django.conf import settings  # noqa: E402

from config import front, processes  # noqa: E402

bind = [f"unix:{front.socket_path()}"]
worker_class = "gthread"
workers = settings.WEB_CONCURRENCY
threads = settings.WEB_THREADS
worker_connections = settings.SERVER_MAX_CONNECTIONS
# Connections come from nginx, which keeps them open for 60 s (deploy/nginx.conf): longer here.
keepalive = 75
graceful_timeout = settings.SERVER_GRACEFUL_TIMEOUT_SECONDS
# nginx applies the request limits; the field count is the request guard's (api.request_guard).
limit_request_line = 0
limit_request_fields = 32768
limit_request_field_size = 0
accesslog = "-"
# The client's address, from nginx (gunicorn's own peer is nginx, on a Unix socket).
access_log_format = '%({x-forwarded-for}i)s %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s"'
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

_front: front.Front | None = None
_front_failed = False


def on_starting(server) -> None:
    """In the master, before it binds anything: the TLS files must be readable and nginx's
    configuration valid (config/front.py); the identity policy must fit HOST, where nginx
    listens, gunicorn only this machine, `--bind` included (identity/exposure.py), and is named
    in the log; the metrics of the previous run's processes go
    (observability/metrics_files.py)."""
    from identity.exposure import declared_refusal, policy_record, proxied_refusal

    for name in ("TLS_CERT_FILE", "TLS_KEY_FILE", "TLS_CA_FILE"):
        # e.g. compose's ./certs left empty: say which file, not a traceback from the socket.
        if (path := getattr(settings, name)) and not os.access(path, os.R_OK):
            server.log.error(f"Refusing to start: {name}={path} is not a readable file "
                             "(HTTPS; docs/operations.md, Secure production setup)")
            sys.exit(1)
    for address in server.cfg.address:
        if refusal := proxied_refusal(*_listening(address)):
            server.log.error(refusal)
            sys.exit(1)
    shown, host = _listening((settings.HOST, settings.PORT))
    if refusal := declared_refusal(shown, host) or front.check():
        server.log.error(refusal)
        sys.exit(1)
    server.log.log(*policy_record(shown, host))
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
    """In the master, after a worker exited: prometheus_client forgets its live gauges (the
    service has none yet; its counters and histograms stay counted)."""
    if settings.METRICS_DIR:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid, settings.METRICS_DIR)


# What each worker starts after the fork, and does when it stops gracefully.
post_worker_init = processes.web_worker_start
worker_exit = processes.web_worker_stop


def when_ready(server) -> None:
    """In the master, once: start nginx (the master stops when nginx does), then what
    config/processes.py starts in the master."""
    global _front

    def nginx_ended() -> None:
        global _front_failed
        _front_failed = True
        server.log.error("nginx stopped unexpectedly; stopping")
        os.kill(os.getpid(), signal.SIGTERM)

    _front = front.Front(nginx_ended)
    processes.web_master_start(server)


def on_exit(server) -> None:
    """In the master, after the workers stopped (SIGTERM, SIGINT): revoke what was registered,
    within SERVICE_REGISTRY_REVOKE_SECONDS; stop nginx. The exit status is 1 when nginx
    failed."""
    processes.web_master_stop()
    if _front is not None:
        _front.stop()
    if _front_failed:
        sys.exit(1)
