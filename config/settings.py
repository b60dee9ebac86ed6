"""All settings, read from the environment (django-environ) with embedded defaults.

Every variable read here is listed in the README with its default. Invalid values fail at
start-up with ImproperlyConfigured instead of surfacing later as odd behaviour.
"""
import ipaddress
import os
import socket
import urllib.parse
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"
# The release number: its one place is the file VERSION (CHANGELOG.md, docs/operations.md).
PRODUCT_VERSION = (BASE_DIR / "VERSION").read_text().strip()

env = environ.Env()


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """A lower-case enum setting; `_` and `-` are interchangeable, case is ignored."""
    value = env.str(name, default=default).strip().lower().replace("_", "-")
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} is not one of {', '.join(choices)}")
    return value


def env_positive_int(name: str, default: int) -> int:
    value = env.int(name, default=default)
    if value < 1:
        raise ImproperlyConfigured(f"{name} must be a positive integer, got {value}")
    return value


def env_non_negative_int(name: str, default: int) -> int:
    value = env.int(name, default=default)
    if value < 0:
        raise ImproperlyConfigured(f"{name} must not be negative, got {value}")
    return value


def env_origin(name: str) -> str:
    """An http:// or https:// URL of scheme, host and port only, without a trailing slash;
    empty when unset."""
    value = env.str(name, default="").strip().rstrip("/")
    if value:
        parts = urllib.parse.urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname \
                or parts.path or parts.query or parts.fragment:
            raise ImproperlyConfigured(f"{name}={value!r} is not an http:// or https:// URL of "
                                       "scheme, host and port only")
    return value


def env_positive_seconds(name: str, default: float) -> float:
    value = env.float(name, default=default)
    if not value > 0:
        raise ImproperlyConfigured(f"{name} must be a positive number of seconds, got {value}")
    return value


def every(seconds: float, task: str) -> dict:
    """A CELERY_BEAT_SCHEDULE entry. Plain seconds only: config/scheduler.py runs the same
    entries without a broker."""
    return {"task": task, "schedule": float(seconds)}


# --- Django core
SECRET_KEY = env.str("SECRET_KEY", default="insecure-local-default-change-me-in-production")
DEBUG = env.bool("DEBUG", default=False)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["*"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "api",  # counts the requests in progress (api/requests_in_progress.py)
    "identity",
    "general",
    "store",
    "orchestration",
    "subscriptions",
    "notifications",
    "serviceregistry",
    "mqtt_api",
]

MIDDLEWARE = [
    "observability.metrics_middleware.RequestMetricsMiddleware",  # times the whole request
    "api.request_id.RequestIdMiddleware",
    "api.request_guard.RequestGuardMiddleware",  # body size, NUL in URL and headers
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": env.db_url("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}"),
}
# A busy SQLite waits this long for the write lock before "database is locked".
SQLITE_BUSY_TIMEOUT_SECONDS = env.float("SQLITE_BUSY_TIMEOUT_SECONDS", default=20.0)
if SQLITE_BUSY_TIMEOUT_SECONDS <= 0:
    raise ImproperlyConfigured("SQLITE_BUSY_TIMEOUT_SECONDS must be positive")
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    VAR_DIR.mkdir(exist_ok=True)  # the first-run database lives in var/ (git-ignored)
    # Several web processes (and their scheduler threads) share the file. WAL lets readers
    # go on while one writes; IMMEDIATE makes a write transaction take the write lock when it
    # begins, where SQLite waits for it (busy timeout), instead of failing at once with
    # "database is locked" when a read transaction tries to become a writer.
    DATABASES["default"].setdefault("OPTIONS", {}).update({
        "transaction_mode": "IMMEDIATE",
        "timeout": SQLITE_BUSY_TIMEOUT_SECONDS,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    })
DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
# A kept connection is checked before a request or task first uses it: after a database
# restart, each would otherwise fail the first request it serves. On PostgreSQL the check
# asks the socket, not the server (database/postgresql/base.py).
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# A PostgreSQL server that does not answer fails a connection attempt after this long instead
# of holding the request (or the health probe) that needed it.
DATABASE_CONNECT_TIMEOUT_SECONDS = env_positive_int("DATABASE_CONNECT_TIMEOUT_SECONDS", 10)
# The hot paths' plain statements (database/statements.py) are prepared on the server, once
# per connection. Django turns psycopg's prepared statements off unless OPTIONS turns them on
# (for connection poolers that cannot keep them: PgBouncer in transaction mode before 1.21,
# or without max_prepared_statements); false here for such a pooler. Django's own queries
# are never prepared (their parameters are bound on the client).
DATABASE_PREPARED_STATEMENTS = env.bool("DATABASE_PREPARED_STATEMENTS", default=True)
if DATABASES["default"]["ENGINE"].endswith("postgresql"):
    DATABASES["default"]["ENGINE"] = "database.postgresql"
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault(
        "connect_timeout", DATABASE_CONNECT_TIMEOUT_SECONDS)
    # psycopg's default threshold; only statements sent with prepare=True reach it at once.
    DATABASES["default"]["OPTIONS"].setdefault(
        "prepare_threshold", 5 if DATABASE_PREPARED_STATEMENTS else None)
    if DATABASE_PREPARED_STATEMENTS:
        # Each prepared statement is planned once per connection (its generic plan). With the
        # default, PostgreSQL planned the feed read again at every read (0.19 ms, 17 times its
        # execution): knowing the position, a custom plan always looks cheaper. Only these
        # statements are prepared, and each is written for its generic plan.
        DATABASES["default"]["OPTIONS"].setdefault(
            "options", "-c plan_cache_mode=force_generic_plan")
# Retries of a write transaction aborted for a concurrent one (database.transaction_retry).
DATABASE_CONFLICT_RETRIES = env.int("DATABASE_CONFLICT_RETRIES", default=5)
DATABASE_CONFLICT_BACKOFF_SECONDS = env.float("DATABASE_CONFLICT_BACKOFF_SECONDS", default=0.05)
if DATABASE_CONFLICT_RETRIES < 0 or DATABASE_CONFLICT_BACKOFF_SECONDS < 0:
    raise ImproperlyConfigured("DATABASE_CONFLICT_RETRIES and DATABASE_CONFLICT_BACKOFF_SECONDS "
                               "must not be negative")
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# SQLite ignores the deferrable rule constraint; the code has a path for it (store.services.rules).
SILENCED_SYSTEM_CHECKS = ["models.W038"]
AUTH_USER_MODEL = "identity.User"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = env.str("STATIC_ROOT", default=str(VAR_DIR / "static"))
SERVE_STATIC = env.bool("SERVE_STATIC", default=True)

# --- Arrowhead service
# The orchestration strategy (issue 33, docs/flexible-store.md): the pull semantics, the
# services registered and served, and the default system name.
ORCHESTRATION_STRATEGY = env_choice("ORCHESTRATION_STRATEGY", "simple-store",
                                    ("simple-store", "flexible-store"))
SYSTEM_NAME = env.str("SYSTEM_NAME", default={
    "simple-store": "SimpleStoreServiceOrchestration",
    "flexible-store": "FlexibleServiceOrchestration"}[ORCHESTRATION_STRATEGY])
HOST = env.str("HOST", default="127.0.0.1")
PORT = env.int("PORT", default=8465)
# The HTTP server (config/gunicorn.py, config/front.py): 4 processes of 2 threads, chosen by
# measurement for pull on 2 cores (docs/performance.md).
WEB_CONCURRENCY = env_positive_int("WEB_CONCURRENCY", 4)
WEB_THREADS = env_positive_int("WEB_THREADS", 2)
SERVER_MAX_CONNECTIONS = env_positive_int("SERVER_MAX_CONNECTIONS", 1000)
SERVER_HEADER_TIMEOUT_SECONDS = env_positive_seconds("SERVER_HEADER_TIMEOUT_SECONDS", 10)
SERVER_BODY_TIMEOUT_SECONDS = env_positive_seconds("SERVER_BODY_TIMEOUT_SECONDS", 30)
SERVER_KEEPALIVE_SECONDS = env_positive_int("SERVER_KEEPALIVE_SECONDS", 5)
SERVER_GRACEFUL_TIMEOUT_SECONDS = env_positive_int("SERVER_GRACEFUL_TIMEOUT_SECONDS", 30)
SERVER_LIMIT_REQUEST_LINE = env_positive_int("SERVER_LIMIT_REQUEST_LINE", 8190)
SERVER_LIMIT_REQUEST_FIELDS = env_positive_int("SERVER_LIMIT_REQUEST_FIELDS", 100)
SERVER_LIMIT_REQUEST_FIELD_SIZE = env_positive_int("SERVER_LIMIT_REQUEST_FIELD_SIZE", 8190)
# gunicorn's maxima, kept although nginx applies the limits (unchanged configurations).
if SERVER_LIMIT_REQUEST_LINE > 8190:
    raise ImproperlyConfigured("SERVER_LIMIT_REQUEST_LINE must be at most 8190 "
                               "(gunicorn's maximum)")
if SERVER_LIMIT_REQUEST_FIELDS > 32768:
    raise ImproperlyConfigured("SERVER_LIMIT_REQUEST_FIELDS must be at most 32768 "
                               "(gunicorn's maximum)")

AUTHENTICATION_POLICIES = ("declared", "token", "outsourced", "certificate")
AUTHENTICATION_POLICY = env_choice("AUTHENTICATION_POLICY", "declared", AUTHENTICATION_POLICIES)
AUTHENTICATION_SERVICE_URL = env.str("AUTHENTICATION_SERVICE_URL", default="").rstrip("/")
AUTHENTICATION_PASSWORD = env.str("AUTHENTICATION_PASSWORD", default="")
AUTHENTICATION_CACHE_SECONDS = env.int("AUTHENTICATION_CACHE_SECONDS", default=30)
AUTHENTICATION_TIMEOUT_SECONDS = env.float("AUTHENTICATION_TIMEOUT_SECONDS", default=5.0)
# Without AUTHENTICATION_SERVICE_URL the Authentication system is found through the
# ServiceRegistry (checked after SERVICE_REGISTRY_URL below).
if AUTHENTICATION_POLICY == "outsourced" and not AUTHENTICATION_PASSWORD:
    raise ImproperlyConfigured("AUTHENTICATION_POLICY=outsourced needs AUTHENTICATION_PASSWORD")
TLS_CERT_FILE = env.str("TLS_CERT_FILE", default="")
TLS_KEY_FILE = env.str("TLS_KEY_FILE", default="")
TLS_CA_FILE = env.str("TLS_CA_FILE", default="")
if bool(TLS_CERT_FILE) != bool(TLS_KEY_FILE):
    raise ImproperlyConfigured("TLS_CERT_FILE and TLS_KEY_FILE go together")
if AUTHENTICATION_POLICY == "certificate" and not (TLS_CERT_FILE and TLS_CA_FILE):
    raise ImproperlyConfigured("AUTHENTICATION_POLICY=certificate needs TLS_CERT_FILE, "
                               "TLS_KEY_FILE and TLS_CA_FILE (clients present certificates)")
# --- Production safety (issue 29, item 3; docs/identity.md, docs/operations.md)
# The web process and the MQTT interface refuse the declared policy on a non-loopback address
# unless this says only trusted systems reach it (identity/exposure.py). Unsafe.
IDENTITY_DECLARED_ON_NETWORK = env.bool("IDENTITY_DECLARED_ON_NETWORK", default=False)
# A reverse proxy in front terminates TLS and sets `X-Forwarded-Proto: https` (it must replace
# a client's own). With it, or with TLS served here (TLS_CERT_FILE), clients use HTTPS only:
# cookies are Secure and browsers are told HSTS. Redirecting plain HTTP is then not ours to do
# (no plain listener here, or the proxy's), nor is HSTS preload (docs/decisions.md).
TLS_PROXY = env.bool("TLS_PROXY", default=False)
HTTPS_ONLY = bool(TLS_CERT_FILE) or TLS_PROXY
if HTTPS_ONLY:
    # Set by nginx in front (config/front.py), which passes on a TLS_PROXY's.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = 365 * 24 * 3600
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SILENCED_SYSTEM_CHECKS += ["security.W008", "security.W021"]
# --- end of Production safety
MANAGEMENT_POLICIES = ("sysop-only", "whitelist", "permission", "authorization")
MANAGEMENT_POLICY = env_choice("MANAGEMENT_POLICY", "permission", MANAGEMENT_POLICIES)
MANAGEMENT_WHITELIST = env.list("MANAGEMENT_WHITELIST", default=[])
NORMALIZATION_MODE = env_choice("NORMALIZATION_MODE", "extended", ("extended", "simple"))
MAX_PAGE_SIZE = env_positive_int("MAX_PAGE_SIZE", 1000)
MAX_BULK_SIZE = env_positive_int("MAX_BULK_SIZE", 1000)
# Request limits (docs/limits.md): one request may only cause work proportional to these.
MAX_LIST_LENGTH = env_positive_int("MAX_LIST_LENGTH", 100)
MAX_STRING_LENGTH = env_positive_int("MAX_STRING_LENGTH", 4096)
MAX_JSON_DEPTH = env_positive_int("MAX_JSON_DEPTH", 10)
MAX_PULL_OPERATIONS = env_positive_int("MAX_PULL_OPERATIONS", 20)
MAX_SUBSCRIPTIONS_PER_SYSTEM = env_positive_int("MAX_SUBSCRIPTIONS_PER_SYSTEM", 100)
# 2 MiB holds a create of MAX_BULK_SIZE instances of about 2 KB each (docs/decisions.md).
MAX_REQUEST_BODY_BYTES = env_positive_int("MAX_REQUEST_BODY_BYTES", 2 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = MAX_REQUEST_BODY_BYTES  # Django's own check (admin forms) agrees
QOS_ENABLED = env.bool("QOS_ENABLED", default=False)
QOS_PROBE_INTERVAL_SECONDS = env_positive_int("QOS_PROBE_INTERVAL_SECONDS", 30)
QOS_MEASUREMENT_MAX_AGE_SECONDS = env_positive_int("QOS_MEASUREMENT_MAX_AGE_SECONDS", 120)
QOS_PROBE_TIMEOUT_SECONDS = env.float("QOS_PROBE_TIMEOUT_SECONDS", default=2.0)
TOKEN_TTL_SECONDS = env_positive_int("TOKEN_TTL_SECONDS", 60)
TOKEN_USAGE_LIMIT = env_positive_int("TOKEN_USAGE_LIMIT", 10)
IDENTITY_TOKEN_TTL_SECONDS = env_positive_int("IDENTITY_TOKEN_TTL_SECONDS", 365 * 24 * 3600)

# --- ServiceRegistry (docs/local-cloud.md)
# Empty: standalone, no ServiceRegistry traffic at all.
SERVICE_REGISTRY_URL = env_origin("SERVICE_REGISTRY_URL")
if AUTHENTICATION_POLICY == "certificate" and SERVICE_REGISTRY_URL \
        and not SERVICE_REGISTRY_URL.startswith("https:"):
    raise ImproperlyConfigured("SERVICE_REGISTRY_URL must be https:// under "
                               "AUTHENTICATION_POLICY=certificate (the client certificate "
                               "is our identity)")
if AUTHENTICATION_POLICY == "outsourced" and not (AUTHENTICATION_SERVICE_URL
                                                  or SERVICE_REGISTRY_URL):
    raise ImproperlyConfigured("AUTHENTICATION_POLICY=outsourced needs AUTHENTICATION_SERVICE_URL "
                               "or SERVICE_REGISTRY_URL (to find the Authentication system)")
# The address other systems reach us at: HOST, or the host name when HOST is a wildcard.
SERVICE_ADDRESS = env.str("SERVICE_ADDRESS", default="").strip() or (
    socket.gethostname() if HOST in ("0.0.0.0", "::", "") else HOST)
if not SERVICE_ADDRESS or any(character.isspace() or character in "/?#@"
                              for character in SERVICE_ADDRESS):
    raise ImproperlyConfigured(f"SERVICE_ADDRESS={SERVICE_ADDRESS!r} is not a host name or "
                               "IP address")
SERVICE_REGISTRY_CACHE_SECONDS = env_non_negative_int("SERVICE_REGISTRY_CACHE_SECONDS", 10)
SERVICE_REGISTRY_TIMEOUT_SECONDS = env_positive_seconds("SERVICE_REGISTRY_TIMEOUT_SECONDS", 5)
SERVICE_REGISTRY_RETRY_MIN_SECONDS = env_positive_seconds("SERVICE_REGISTRY_RETRY_MIN_SECONDS",
                                                          1)
SERVICE_REGISTRY_RETRY_MAX_SECONDS = env_positive_seconds("SERVICE_REGISTRY_RETRY_MAX_SECONDS",
                                                          60)
if SERVICE_REGISTRY_RETRY_MAX_SECONDS < SERVICE_REGISTRY_RETRY_MIN_SECONDS:
    raise ImproperlyConfigured("SERVICE_REGISTRY_RETRY_MAX_SECONDS must not be less than "
                               "SERVICE_REGISTRY_RETRY_MIN_SECONDS")
SERVICE_REGISTRY_REVOKE_SECONDS = env_positive_seconds("SERVICE_REGISTRY_REVOKE_SECONDS", 5)
SERVICE_REGISTRY_POLL_SECONDS = env_positive_int("SERVICE_REGISTRY_POLL_SECONDS", 30)
# --- end of ServiceRegistry

# --- ConsumerAuthorization and Blacklist (docs/local-cloud.md "Other systems")
# Each is found through the ServiceRegistry unless its URL (scheme://host:port) is set.
CONSUMER_AUTHORIZATION_URL = env_origin("CONSUMER_AUTHORIZATION_URL")
BLACKLIST_URL = env_origin("BLACKLIST_URL")
PEER_TIMEOUT_SECONDS = env_positive_seconds("PEER_TIMEOUT_SECONDS", 5)
CONSUMER_AUTHORIZATION_CACHE_SECONDS = env_non_negative_int(
    "CONSUMER_AUTHORIZATION_CACHE_SECONDS", 5)
AUTHORIZATION_TOKENS = env_choice("AUTHORIZATION_TOKENS", "own",
                                  ("own", "consumer-authorization"))
# The flexible store: offer only providers that granted the consumer their service in
# ConsumerAuthorization (docs/flexible-store.md).
CONSUMER_AUTHORIZATION_FILTER = env.bool("CONSUMER_AUTHORIZATION_FILTER", default=False)
BLACKLIST_FILTER = env.bool("BLACKLIST_FILTER", default=False)
BLACKLIST_FORCE = env.bool("BLACKLIST_FORCE", default=True)
BLACKLIST_EXCLUDE = env.list("BLACKLIST_EXCLUDE", default=[
    "ServiceRegistry", "Authentication", "ConsumerAuthorization", "DynamicServiceOrchestration"])
BLACKLIST_CACHE_SECONDS = env_non_negative_int("BLACKLIST_CACHE_SECONDS", 5)
if (MANAGEMENT_POLICY == "authorization" or AUTHORIZATION_TOKENS == "consumer-authorization"
        or CONSUMER_AUTHORIZATION_FILTER) \
        and not (CONSUMER_AUTHORIZATION_URL or SERVICE_REGISTRY_URL):
    raise ImproperlyConfigured("MANAGEMENT_POLICY=authorization, "
                               "AUTHORIZATION_TOKENS=consumer-authorization and "
                               "CONSUMER_AUTHORIZATION_FILTER need "
                               "CONSUMER_AUTHORIZATION_URL or SERVICE_REGISTRY_URL")
if BLACKLIST_FILTER and not (BLACKLIST_URL or SERVICE_REGISTRY_URL):
    raise ImproperlyConfigured("BLACKLIST_FILTER needs BLACKLIST_URL or SERVICE_REGISTRY_URL")

# --- Celery (CELERY_BROKER_URL unset: tasks run in-process)
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="") or "memory://"
CELERY_TASK_ALWAYS_EAGER = CELERY_BROKER_URL == "memory://"
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_IGNORE_RESULT = True
CELERY_TIMEZONE = "UTC"
CELERY_TASK_DEFAULT_QUEUE = env.str("CELERY_TASK_DEFAULT_QUEUE", default="serviceorchestration")
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# In var/ (git-ignored; `make beat` creates it), not in the working directory.
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
# Processes of `make worker-main` (the default and MQTT delivery queues). Its tasks wait on the
# database and the MQTT broker much of the time: with one process per core a 10 000-subscriber
# fan-out left 40 % of the CPU idle while sending (docs/performance.md, push fan-out).
CELERY_WORKER_CONCURRENCY = env_positive_int("WORKER_CONCURRENCY", 2 * (os.cpu_count() or 1))
# Change processing waits for a burst of rule or catalog changes to end: it runs once no change
# has come for SUBSCRIPTION_QUIET_SECONDS, and never later than SUBSCRIPTION_MAX_DELAY_SECONDS
# after the oldest change it has not processed (docs/subscriptions.md, "When a push happens").
SUBSCRIPTION_QUIET_SECONDS = env_positive_seconds("SUBSCRIPTION_QUIET_SECONDS", 0.05)
SUBSCRIPTION_MAX_DELAY_SECONDS = env_positive_seconds("SUBSCRIPTION_MAX_DELAY_SECONDS", 1.0)
if SUBSCRIPTION_MAX_DELAY_SECONDS < SUBSCRIPTION_QUIET_SECONDS:
    raise ImproperlyConfigured("SUBSCRIPTION_MAX_DELAY_SECONDS must be at least "
                               "SUBSCRIPTION_QUIET_SECONDS")
if "SUBSCRIPTION_COALESCE_SECONDS" in os.environ:  # the fixed window before 2026-11-29
    raise ImproperlyConfigured("SUBSCRIPTION_COALESCE_SECONDS is replaced by "
                               "SUBSCRIPTION_QUIET_SECONDS and SUBSCRIPTION_MAX_DELAY_SECONDS "
                               "(CHANGELOG.md); remove it")
# How many worker processes share the evaluation of a change that concerns more subscriptions
# than one batch (500): the round's own and helpers asked through the queue (with a broker
# only; docs/subscriptions.md, "When a push happens"). 1: the round's process alone.
SUBSCRIPTION_EVALUATION_PROCESSES = env_positive_int("SUBSCRIPTION_EVALUATION_PROCESSES",
                                                     os.cpu_count() or 1)
INSTANCE_CLEANUP_INTERVAL_SECONDS = env_positive_int("INSTANCE_CLEANUP_INTERVAL_SECONDS", 60)
CELERY_BEAT_SCHEDULE = {
    "remove-expired-instances": every(INSTANCE_CLEANUP_INTERVAL_SECONDS,
                                      "store.remove_expired_instances"),
    "remove-expired-subscriptions": every(INSTANCE_CLEANUP_INTERVAL_SECONDS,
                                          "subscriptions.remove_expired"),
    # Without a broker the only path; with one a safety net.
    "process-catalog-changes": every(2, "subscriptions.process_changes"),
    "remove-expired-locks-and-tokens": every(INSTANCE_CLEANUP_INTERVAL_SECONDS,
                                             "orchestration.remove_expired_locks_and_tokens"),
}
if QOS_ENABLED:  # the probe connects to provider addresses: only when QoS is switched on
    CELERY_BEAT_SCHEDULE["measure-interface-latency"] = every(
        QOS_PROBE_INTERVAL_SECONDS, "orchestration.measure_interface_latency")
if SERVICE_REGISTRY_URL:  # docs/local-cloud.md "Polling"
    CELERY_BEAT_SCHEDULE["poll-service-registry"] = every(SERVICE_REGISTRY_POLL_SECONDS,
                                                          "serviceregistry.poll_instances")

# --- History
# Finished jobs are deleted this many days after (docs/history.md); 0 keeps them forever.
HISTORY_MAX_AGE_DAYS = env.int("HISTORY_MAX_AGE_DAYS", default=15)
if HISTORY_MAX_AGE_DAYS < 0:
    raise ImproperlyConfigured(
        f"HISTORY_MAX_AGE_DAYS must be 0 (keep forever) or a number of days, got "
        f"{HISTORY_MAX_AGE_DAYS}")
CELERY_BEAT_SCHEDULE["remove-old-jobs"] = every(300, "orchestration.remove_old_jobs")
# The history's count rows (one per job-writing statement) folded into one per type and status.
CELERY_BEAT_SCHEDULE["compact-job-counts"] = every(30, "orchestration.compact_job_counts")

# --- Pull snapshot (orchestration/snapshot/state.py, docs/performance.md)
# Above PULL_SNAPSHOT_MAX_RULES rules (about 45-60 bytes each per process, loaded or grown
# change by change) pulls query the database.
PULL_SNAPSHOT = env.bool("PULL_SNAPSHOT", default=True)
PULL_SNAPSHOT_MAX_RULES = env_non_negative_int("PULL_SNAPSHOT_MAX_RULES", 2_000_000)
CELERY_BEAT_SCHEDULE["prune-snapshot-changes"] = every(60, "orchestration.prune_snapshot_changes")

# --- MQTT (notification delivery)
MQTT_BROKER_URL = env.str("MQTT_BROKER_URL", default="mqtt://127.0.0.1:1883")
MQTT_API_ENABLED = env.bool("MQTT_API_ENABLED", default=False)
MQTT_API_BASE_TOPIC = env.str("MQTT_API_BASE_TOPIC", default="arrowhead/serviceorchestration/")
if not MQTT_API_BASE_TOPIC.endswith("/") or any(c in MQTT_API_BASE_TOPIC for c in "#+\x00"):
    raise ImproperlyConfigured("MQTT_API_BASE_TOPIC must be a topic name ending with '/', "
                               f"without wildcards, got {MQTT_API_BASE_TOPIC!r}")
# The interface's processes share the requests in this group ($share/<group>/...).
MQTT_API_SHARE_GROUP = env.str("MQTT_API_SHARE_GROUP", default="serviceorchestration")
# Each system's MQTT topics under `<root><system name>/` (docs/mqtt-api.md); empty: any topic.
MQTT_SYSTEM_TOPIC_ROOT = env.str("MQTT_SYSTEM_TOPIC_ROOT", default="")
if MQTT_SYSTEM_TOPIC_ROOT and (not MQTT_SYSTEM_TOPIC_ROOT.endswith("/") or any(
        c in MQTT_SYSTEM_TOPIC_ROOT for c in "#+\x00")):
    raise ImproperlyConfigured("MQTT_SYSTEM_TOPIC_ROOT must be empty or a topic name ending "
                               f"with '/', without wildcards, got {MQTT_SYSTEM_TOPIC_ROOT!r}")
MQTT_API_THREADS = env_positive_int("MQTT_API_THREADS", 4)
MQTT_API_QUEUE = env_positive_int("MQTT_API_QUEUE", 1000)
# At least the largest request (checked by mqtt_api.server).
MQTT_API_BUDGET_BYTES = env_positive_int("MQTT_API_BUDGET_BYTES", 32 * 1024 * 1024)

# --- Metrics (issue 17; docs/metrics.md)
METRICS_ENABLED = env.bool("METRICS_ENABLED", default=False)
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
# Every process of this host writes its counts to files in this directory and a scrape adds
# them up. prometheus_client reads the directory from the environment only, before any metric
# exists: it is exported here, where every process reads its settings first.
METRICS_DIR = ""  # off: each process counts in memory, and nothing shows it
if METRICS_ENABLED:
    METRICS_DIR = env.str("PROMETHEUS_MULTIPROC_DIR", default=str(VAR_DIR / "metrics"))
    Path(METRICS_DIR).mkdir(parents=True, exist_ok=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = METRICS_DIR

# --- REST framework and OpenAPI
REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["api.json_media.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["api.json_media.JSONParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": ["identity.authentication.ArrowheadAuthentication"],
    # The Blacklist filter comes before every other permission, as in the reference's filter
    # chain (order 20, before the management filter): a blacklisted system learns nothing else.
    "DEFAULT_PERMISSION_CLASSES": ["identity.blacklist.BlacklistPermission",
                                   "identity.permissions.ManagementPermission",
                                   "api.strategy_gate.ServedByStrategy"],
    "EXCEPTION_HANDLER": "api.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Service Orchestration",
    "DESCRIPTION": "Arrowhead-compatible orchestration core system: rule store management, "
    "orchestration (pull, subscribe, unsubscribe), push management, history management and "
    "general management (logs, public configuration).",
    "VERSION": PRODUCT_VERSION,
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "PREPROCESSING_HOOKS": ["api.schema.served_endpoints"],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "api.schema.postprocess_bodies",
        "api.name_fields.postprocess_request_names",
        "api.schema.postprocess_server_limits",
    ],
}

# --- Readiness: monitor/health waits this long for each dependency (observability/health.py)
HEALTH_TIMEOUT_SECONDS = env_positive_seconds("HEALTH_TIMEOUT_SECONDS", 3)

# --- Logging: every line carries the request id
LOG_LEVEL = env.str("LOG_LEVEL", default="INFO").upper()
# plain: `time level [request id] logger: message` lines; json: one JSON object per line
# (observability.log_records.JsonFormatter), for every process (gunicorn's own lines too).
LOG_FORMAT = env_choice("LOG_FORMAT", "plain", ("plain", "json"))
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "api.request_id.RequestIdLogFilter"},
                "routine_tasks": {"()": "observability.log_records.RoutineTaskFilter"}},
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s [%(request_id)s] %(name)s: %(message)s"},
        "json": {"()": "observability.log_records.JsonFormatter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "filters": ["request_id"],
            "formatter": LOG_FORMAT,
        },
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        # Our own handler logs 500s once, with the request id; Django would log them again.
        "django.request": {"level": "ERROR", "handlers": [], "propagate": False},
        # Periodic tasks' "received"/"succeeded" lines are DEBUG (observability.log_records).
        "celery.app.trace": {"filters": ["routine_tasks"]},
        "celery.worker.strategy": {"filters": ["routine_tasks"]},
    },
}
# Celery workers log through LOGGING as every other process does (format, request ids, the
# database handler) instead of replacing the root logger's handlers with their own.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

# --- General management: logs in the database, their retention
# Records at LOG_DB_LEVEL and above (and at LOG_LEVEL, which passes them on) are also stored
# for the logs query (general.log_handler); OFF stores nothing.
LOG_DB_LEVEL = env.str("LOG_DB_LEVEL", default="WARNING").strip().upper()
if LOG_DB_LEVEL not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL", "OFF"):
    raise ImproperlyConfigured(f"LOG_DB_LEVEL={LOG_DB_LEVEL!r} is not one of DEBUG, INFO, "
                               "WARNING, ERROR, CRITICAL, OFF")
LOG_DB_MAX_AGE_DAYS = env_non_negative_int("LOG_DB_MAX_AGE_DAYS", 15)
if LOG_DB_LEVEL != "OFF":
    LOGGING["handlers"]["database"] = {
        "class": "general.log_handler.DatabaseLogHandler",
        "level": LOG_DB_LEVEL,
        "filters": ["request_id"],
    }
    LOGGING["root"]["handlers"].append("database")
CELERY_BEAT_SCHEDULE["remove-old-logs"] = every(3600, "general.remove_old_logs")
# --- end of General management

# --- Notifications
MQTT_QOS = env.int("MQTT_QOS", default=1)
if MQTT_QOS not in (0, 1, 2):
    raise ImproperlyConfigured(f"MQTT_QOS must be 0, 1 or 2, got {MQTT_QOS}")
MQTT_TIMEOUT_SECONDS = env_positive_int("MQTT_TIMEOUT_SECONDS", 5)
NOTIFY_HTTP_CONNECT_TIMEOUT_SECONDS = env_positive_int("NOTIFY_HTTP_CONNECT_TIMEOUT_SECONDS", 2)
NOTIFY_HTTP_TIMEOUT_SECONDS = env_positive_int("NOTIFY_HTTP_TIMEOUT_SECONDS", 10)
# CIDRs HTTP(S) notifications may reach besides public addresses (notifications/address_policy).
NOTIFY_HTTP_ALLOWED_NETWORKS = env.list("NOTIFY_HTTP_ALLOWED_NETWORKS", default=[])
try:
    NOTIFY_HTTP_ALLOWED_NETWORKS = tuple(ipaddress.ip_network(network.strip())
                                         for network in NOTIFY_HTTP_ALLOWED_NETWORKS
                                         if network.strip())
except ValueError as error:
    raise ImproperlyConfigured(f"NOTIFY_HTTP_ALLOWED_NETWORKS: {error}") from None
# One slow or dead HTTP destination (host:port) may only delay its own notifications.
NOTIFY_DESTINATION_MAX_IN_FLIGHT = env_positive_int("NOTIFY_DESTINATION_MAX_IN_FLIGHT", 2)
NOTIFY_BREAKER_FAILURES = env_positive_int("NOTIFY_BREAKER_FAILURES", 5)
NOTIFY_BREAKER_COOLDOWN_SECONDS = env_positive_int("NOTIFY_BREAKER_COOLDOWN_SECONDS", 30)
NOTIFY_HTTP_CONCURRENCY = env_positive_int("NOTIFY_HTTP_CONCURRENCY", 8)
NOTIFY_HTTP_UNPROVEN_MAX_IN_FLIGHT = env_positive_int(
    "NOTIFY_HTTP_UNPROVEN_MAX_IN_FLIGHT", max(1, NOTIFY_HTTP_CONCURRENCY // 2))
NOTIFICATION_RETRY_BASE_SECONDS = env_positive_int("NOTIFICATION_RETRY_BASE_SECONDS", 2)
NOTIFICATION_RETRY_MAX_SECONDS = env_positive_int("NOTIFICATION_RETRY_MAX_SECONDS", 300)
NOTIFICATION_SWEEP_INTERVAL_SECONDS = env_positive_int("NOTIFICATION_SWEEP_INTERVAL_SECONDS", 5)
# A sender renews its claim every third of the lease: three seconds at least, so that a
# renewal (one short UPDATE) always fits twice into a lease.
NOTIFICATION_SENDING_LEASE_SECONDS = env_positive_int("NOTIFICATION_SENDING_LEASE_SECONDS", 15)
if NOTIFICATION_SENDING_LEASE_SECONDS < 3:
    raise ImproperlyConfigured(f"NOTIFICATION_SENDING_LEASE_SECONDS must be at least 3, got "
                               f"{NOTIFICATION_SENDING_LEASE_SECONDS}")
CELERY_BEAT_SCHEDULE["sweep-notifications"] = every(
    NOTIFICATION_SWEEP_INTERVAL_SECONDS, "notifications.sweep")
NOTIFICATION_MAX_AGE_DAYS = env_non_negative_int("NOTIFICATION_MAX_AGE_DAYS", 15)
CELERY_BEAT_SCHEDULE["remove-old-deliveries"] = every(300, "notifications.remove_old_deliveries")
# --- end of Notifications

# --- Push management
# docs/push-management.md: stale and timed-out jobs.
PUSH_JOB_STALE_SECONDS = env_positive_int("PUSH_JOB_STALE_SECONDS", 60)
PUSH_JOB_TIMEOUT_SECONDS = env_positive_int("PUSH_JOB_TIMEOUT_SECONDS", 600)
PUSH_JOB_SWEEP_INTERVAL_SECONDS = env_positive_int("PUSH_JOB_SWEEP_INTERVAL_SECONDS", 30)
if PUSH_JOB_TIMEOUT_SECONDS <= PUSH_JOB_STALE_SECONDS:
    raise ImproperlyConfigured("PUSH_JOB_TIMEOUT_SECONDS must be greater than "
                               "PUSH_JOB_STALE_SECONDS")
CELERY_BEAT_SCHEDULE["sweep-push-jobs"] = every(
    PUSH_JOB_SWEEP_INTERVAL_SECONDS, "subscriptions.sweep_push_jobs")
# --- end of Push management
