"""What the service logs: LOG_FORMAT=json gives one JSON object per line (gunicorn's own lines
too) with the request id; periodic tasks' routine lines are DEBUG; a failed delivery attempt is
a WARNING naming its subscription and consumer; nothing else warns in a normal run."""
import io
import json
import logging
import urllib.request

import pytest
from celery.app.trace import LOG_SUCCESS

from api.request_id import RequestIdLogFilter
from observability.log_records import JsonFormatter
from tests.concurrency import wait_until
from tests.ports import reserved_port
from tests.web_server import gunicorn

pytestmark = pytest.mark.django_db(transaction=True)

SUBSCRIBE = "/serviceorchestration/orchestration/subscribe?trigger=true"


def celery_success_line(task: str) -> None:
    logging.getLogger("celery.app.trace").info(LOG_SUCCESS, {
        "id": "1", "name": task, "return_value": 0, "runtime": 0.001, "args": "", "kwargs": ""})


class RoutineTaskTests:
    def test_a_periodic_tasks_success_is_debug_and_others_stay_info(self, caplog):
        with caplog.at_level(logging.INFO):
            celery_success_line("notifications.sweep")
            celery_success_line("subscriptions.process_changes")
            celery_success_line("notifications.deliver_batch")
        assert [(r.levelname, r.args["name"]) for r in caplog.records] == [
            ("INFO", "notifications.deliver_batch")]

    def test_at_debug_the_routine_lines_are_there_as_debug(self, caplog):
        with caplog.at_level(logging.DEBUG):
            logging.getLogger().setLevel(logging.DEBUG)
            try:
                celery_success_line("notifications.sweep")
            finally:
                logging.getLogger().setLevel(logging.INFO)
        assert [r.levelname for r in caplog.records] == ["DEBUG"]


class JsonFormatTests:
    def test_a_record_is_one_json_line_with_the_request_id(self, client, settings):
        settings.AUTHENTICATION_POLICY = "outsourced"  # a request that logs a warning
        settings.AUTHENTICATION_SERVICE_URL = f"http://127.0.0.1:{reserved_port()}"
        settings.AUTHENTICATION_PASSWORD = "secret"
        output = io.StringIO()
        handler = logging.StreamHandler(output)
        handler.setFormatter(JsonFormatter())
        handler.addFilter(RequestIdLogFilter())
        logger = logging.getLogger()
        logger.addHandler(handler)
        try:
            response = client.post("/serviceorchestration/orchestration/pull", {},
                                   content_type="application/json",
                                   HTTP_AUTHORIZATION="Bearer IDENTITY-TOKEN//x",
                                   HTTP_X_REQUEST_ID="req-42")
        finally:
            logger.removeHandler(handler)
        assert response.status_code == 503
        entries = [json.loads(line) for line in output.getvalue().splitlines()]
        warned = [e for e in entries if "Authentication system is not available" in e["message"]]
        assert len(warned) == 1, entries
        entry = warned[0]
        assert entry["requestId"] == "req-42" and entry["level"] == "WARNING"
        assert entry["logger"] == "serviceorchestration.auth"
        assert set(entry) >= {"time", "level", "logger", "message", "requestId", "process",
                              "thread"}

    def test_a_traceback_stays_inside_its_line(self):
        try:
            raise ValueError("bad\nvalue")
        except ValueError:
            record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed: %s", ("it",),
                                       exc_info=__import__("sys").exc_info())
        line = JsonFormatter().format(record)
        assert "\n" not in line
        entry = json.loads(line)
        assert entry["message"] == "failed: it"
        assert "ValueError: bad\nvalue" in entry["exception"]


def post(port: int, path: str, body: dict, system: str) -> int:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer SYSTEM//{system}",
                 "X-Request-ID": "sub-1"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status


class EmbeddedRunTests:
    def test_a_run_of_make_run_defaults_logs_json_without_noise(self, tmp_path):
        log = tmp_path / "gunicorn.log"
        unreachable = reserved_port()
        with gunicorn({"CELERY_BROKER_URL": "", "LOG_FORMAT": "json",
                       "NOTIFICATION_RETRY_BASE_SECONDS": "1"}, log) as port:
            assert post(port, SUBSCRIBE, {
                "orchestrationRequest": {"serviceRequirement": {"serviceDefinition": "temp"}},
                "notifyInterface": {"protocol": "HTTP", "properties": {
                    "address": "127.0.0.1", "port": unreachable, "method": "POST",
                    "path": "/notify"}}}, "Car1") == 201
            # Three attempts: without a broker the retries are the sweeper's (every 5 s), so
            # it ran twice, and the tasks every 2 s ran between those runs.
            assert wait_until(
                lambda: log.read_text().count("Notification delivery") >= 3, timeout=40), \
                log.read_text()[-3000:]
        entries = [json.loads(line) for line in log.read_text().splitlines()]
        assert any(e["logger"] == "gunicorn.error" and "Booting worker" in e["message"]
                   for e in entries)
        assert any(e["logger"] == "gunicorn.access" and e["requestId"] == "sub-1"
                   for e in entries)
        assert not [e for e in entries if "succeeded in" in e["message"]]
        warnings = [e for e in entries if e["level"] not in ("INFO", "DEBUG")]
        assert warnings and all(w["message"].startswith("Notification delivery ")
                                for w in warnings), warnings
        assert "(consumer Car1, attempt 1)" in warnings[0]["message"]
        assert f"127.0.0.1:{unreachable}" in warnings[0]["message"]
        assert "will be retried" in warnings[0]["message"]
