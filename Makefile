# `make run`: set up and serve on HOST:PORT (default 127.0.0.1:8465) with the embedded defaults.
# `make test`: set up and run every test against PostgreSQL, Redis and Mosquitto: the running
# ones at the TEST_* addresses below, else private ones started for the run (docs/testing.md).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

# The running servers `make test` should use (postgres://, redis://, mqtt:// URLs), from the
# environment or the command line. Unset, it uses those on the default ports
# (postgres://postgres@127.0.0.1:5432/serviceorchestration, redis://127.0.0.1:6379/0,
# mqtt://127.0.0.1:1883) when they answer, and starts private ones otherwise
# (tests/run_with_services.py).
TEST_DATABASE_URL ?=
TEST_CELERY_BROKER_URL ?=
TEST_MQTT_BROKER_URL ?=

.PHONY: nginx run test worker worker-main worker-http beat mqtt-api install clean bench screenshots mutation

$(VENV)/.installed: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

$(VENV)/.installed-test: requirements-test.txt $(VENV)/.installed
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-test.txt
	touch $@

install: $(VENV)/.installed

# The web process runs nginx in front of gunicorn (config/front.py). On a fresh Debian or Ubuntu
# machine run as root, `make run` installs it (nginx-light) when missing, as `make test` does.
NGINX_FOUND := PATH="$$PATH:/usr/sbin:/usr/local/sbin" command -v nginx >/dev/null

nginx:
	@$(NGINX_FOUND) || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		echo "make run: installing nginx-light (apt-get)" && apt-get update -q >/dev/null && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		nginx-light >/dev/null; } || true

run: $(VENV)/.installed nginx
	$(PY) manage.py ensure_database
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput --verbosity 0
	$(VENV)/bin/gunicorn --config python:config.gunicorn config.wsgi

# `make worker` runs two workers side by side (Ctrl-C stops both): one for the default queue
# and MQTT deliveries, one with NOTIFY_HTTP_CONCURRENCY threads for HTTP deliveries, so that
# slow HTTP endpoints cannot take the slots of anything else. `make worker-main` and
# `make worker-http` start one of them (e.g. on different hosts).
CELERY_TASK_DEFAULT_QUEUE ?= serviceorchestration
NOTIFY_HTTP_CONCURRENCY ?= 8

worker: $(VENV)/.installed
	$(MAKE) --no-print-directory -j2 worker-main worker-http

# Each Celery process runs under config.keep_running, which starts it again when it dies on its
# own (e.g. of an error while its broker restarts); Ctrl-C and SIGTERM stop it for good.
KEEP_RUNNING := $(PY) -m config.keep_running --

worker-main: $(VENV)/.installed
	$(KEEP_RUNNING) $(VENV)/bin/celery --app config worker --hostname main@%h --loglevel INFO \
		--queues $(CELERY_TASK_DEFAULT_QUEUE),$(CELERY_TASK_DEFAULT_QUEUE).mqtt

worker-http: $(VENV)/.installed
	$(KEEP_RUNNING) $(VENV)/bin/celery --app config worker --hostname http@%h --loglevel INFO \
		--queues $(CELERY_TASK_DEFAULT_QUEUE).http \
		--pool threads --concurrency $(NOTIFY_HTTP_CONCURRENCY)

beat: $(VENV)/.installed
	mkdir -p var
	$(KEEP_RUNNING) $(VENV)/bin/celery --app config beat --loglevel INFO

# The MQTT interface (MQTT_API_ENABLED=true): every operation over the broker. Start several
# to share the load (MQTT shared subscriptions).
mqtt-api: $(VENV)/.installed
	$(PY) manage.py ensure_database
	$(PY) manage.py migrate --noinput
	$(PY) manage.py mqtt_api

test: $(VENV)/.installed-test
	TEST_DATABASE_URL='$(TEST_DATABASE_URL)' \
	TEST_CELERY_BROKER_URL='$(TEST_CELERY_BROKER_URL)' \
	TEST_MQTT_BROKER_URL='$(TEST_MQTT_BROKER_URL)' \
	$(PY) -m tests.run_with_services -- $(PY) -m pytest $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) var

# Benchmarks print their figures; see bench/. broker_restart.py starts a private Redis with
# the tests' tools (requirements-test.txt).
bench: $(VENV)/.installed-test
	$(PY) bench/rules_at_scale.py
	$(PY) bench/history_query.py
	$(PY) bench/http_throughput.py --slow 8
	$(PY) bench/pull_http.py --metrics
	$(PY) bench/pull_http.py --sqlite
	$(PY) bench/pull_http.py --scale-check
	$(PY) bench/pull_http.py --flexible
	$(PY) bench/pull_http.py --bulk
	$(PY) bench/push_fanout.py
	$(PY) bench/push_fanout.py --subscriptions 100000 --topology production
	$(PY) bench/push_latency.py
	$(PY) bench/http_fairness.py
	$(PY) bench/broker_restart.py

# Mutation check (docs/testing.md): mutants of the core modules against their fast tests, in
# copies of the tree under /tmp; `make mutation MODULE=orchestration/pull/matching.py` for one.
mutation: $(VENV)/.installed-test
	$(PY) bench/mutation_check.py $(if $(MODULE),--module $(MODULE)) $(MUTATION_ARGS)

# The admin screenshots of docs/admin.md, taken from the real admin with headless Chromium
# (apt-get install chromium chromium-driver) over a throw-away database; Selenium lives in a
# virtualenv of its own, so neither the service nor `make test` needs a browser.
SCREENSHOTS_VENV := var/screenshots-venv

$(SCREENSHOTS_VENV)/.installed: docs/screenshots/requirements.txt
	test -x $(SCREENSHOTS_VENV)/bin/python || $(PYTHON) -m venv $(SCREENSHOTS_VENV)
	$(SCREENSHOTS_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r docs/screenshots/requirements.txt
	touch $@

screenshots: $(VENV)/.installed $(SCREENSHOTS_VENV)/.installed
	$(SCREENSHOTS_VENV)/bin/python docs/screenshots/take.py --python $(PY)
