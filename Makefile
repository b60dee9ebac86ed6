# `make run`: set up and serve on HOST:PORT (default 127.0.0.1:8465) with the embedded defaults.
# `make test`: set up and run every test against the local PostgreSQL, Redis and Mosquitto.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

# What `make test` runs against; each can be overridden from the environment.
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/serviceorchestration
TEST_CELERY_BROKER_URL ?= redis://127.0.0.1:6379/0
TEST_MQTT_BROKER_URL ?= mqtt://127.0.0.1:1883

.PHONY: run test worker beat install clean bench

$(VENV)/.installed: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

$(VENV)/.installed-test: requirements-test.txt $(VENV)/.installed
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-test.txt
	touch $@

install: $(VENV)/.installed

run: $(VENV)/.installed
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput --verbosity 0
	$(VENV)/bin/gunicorn --config python:config.gunicorn config.wsgi

worker: $(VENV)/.installed
	$(VENV)/bin/celery --app config worker --loglevel INFO

beat: $(VENV)/.installed
	$(VENV)/bin/celery --app config beat --loglevel INFO

test: $(VENV)/.installed-test
	DATABASE_URL=$(TEST_DATABASE_URL) \
	CELERY_BROKER_URL=$(TEST_CELERY_BROKER_URL) \
	MQTT_BROKER_URL=$(TEST_MQTT_BROKER_URL) \
	$(PY) -m pytest $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) var

# Benchmarks print their figures; see bench/.
bench: $(VENV)/.installed
	$(PY) bench/rules_at_scale.py
