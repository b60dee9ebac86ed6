"""GET /metrics (issue 17; docs/metrics.md): off by default, the exposition and its families,
what moves each metric (a pull, a subscribe, an outbound call, a delivery), the token, route
labels instead of paths, and the counts of several processes (gunicorn's workers, a Celery
worker) added up in one scrape."""
import http.client
import os
import threading
import time
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from prometheus_client import REGISTRY
from prometheus_client.mmap_dict import MmapedDict, mmap_key
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)
from prometheus_client.parser import text_string_to_metric_families

from config.celery import app as celery_app
from notifications.services import deliveries_send
from notifications.models import NotificationDelivery
from notifications.services import delivery_send
from observability.metrics import REQUESTS
from observability.metrics_endpoint import TOKEN_MISSING
from clients import exchange
from clients import serviceregistry as client
from subscriptions.models import Subscription
from tests.concurrency import run_together, wait_for
from tests.endpoints import make_delivery
from tests.factories import make_rules, make_subscription
from tests.helpers import as_system, assert_error, assert_unauthenticated
from tests.identity.test_authorization_policy import (  # noqa: F401 (ca is a fixture)
    NAME,
    STORE,
    ca,
    create,
)
from tests.orchestration.helpers import PULL, pull
from tests.ports import reserved_port
from tests.subscriptions.helpers import UNSUBSCRIBE, subscribe, subscription_body
from tests.web_server import gunicorn_process
from tests.worker import forget_queues, start_worker, stop_worker, worker_environment

pytestmark = pytest.mark.django_db

METRICS = "/metrics"
ECHO = "/serviceorchestration/monitor/echo"
PREFIX = "serviceorchestration"
FAMILIES = {  # every family the exposition must hold (counters without their _total)
    f"{PREFIX}_requests", f"{PREFIX}_request_duration_seconds", f"{PREFIX}_pulls",
    f"{PREFIX}_outbound_calls", f"{PREFIX}_notification_deliveries",
    f"{PREFIX}_notification_delivery_seconds", f"{PREFIX}_subscriptions",
    f"{PREFIX}_notification_backlog", f"{PREFIX}_notification_backlog_due",
    f"{PREFIX}_notification_backlog_oldest_seconds", f"{PREFIX}_state_up"}
RULE_ID = "CarManager|carService1|4.0.0"


@pytest.fixture
def metrics_on(settings):
    settings.METRICS_ENABLED = True
    settings.METRICS_TOKEN = ""


def scrape(api, **headers) -> dict:
    response = api.get(METRICS, **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    return {family.name: family
            for family in text_string_to_metric_families(response.content.decode())}


def value(families: dict, name: str, **labels: str) -> float:
    """The sample `name` with exactly these labels; 0 when the exposition has none."""
    return sum(sample.value for family in families.values() for sample in family.samples
               if sample.name == name and sample.labels == labels)


def requests_of(families: dict, route: str, status: int) -> float:
    return value(families, f"{PREFIX}_requests_total", route=route, status=str(status))


class MetricsOffTests:
    def test_it_is_off_by_default(self, settings):
        assert settings.METRICS_ENABLED is False

    @pytest.mark.parametrize("headers", [{}, as_system("Consumer"), {
        "HTTP_AUTHORIZATION": "Bearer some-metrics-token"}])
    @pytest.mark.parametrize("method", ["get", "post"])
    def test_it_answers_404_as_an_unknown_path_does_when_off(self, api, headers, method):
        """Off, the path is absent for everyone: 404, never the 401 that an anonymous caller
        of an unknown path gets, which would read as a wrong token."""
        unknown = getattr(api, method)("/metricz", **as_system("Consumer"))
        metrics = getattr(api, method)(METRICS, **headers)
        assert unknown.status_code == 404
        assert_error(metrics, 404, "DATA_NOT_FOUND",
                     f"No such endpoint: {method.upper()} {METRICS}", f"{method.upper()} {METRICS}")
        assert metrics.json() == {key: field.replace("/metricz", METRICS) if isinstance(
            field, str) else field for key, field in unknown.json().items()}
        assert "WWW-Authenticate" not in metrics

    def test_it_counts_no_requests_when_off(self, api):
        labels = {"route": ECHO, "status": "200"}
        before = REGISTRY.get_sample_value(f"{PREFIX}_requests_total", labels) or 0
        assert api.get(ECHO).status_code == 200
        assert (REGISTRY.get_sample_value(f"{PREFIX}_requests_total", labels) or 0) == before


class ExpositionTests:
    def test_it_holds_every_family_in_the_text_format(self, api, metrics_on):
        families = scrape(api)
        assert FAMILIES <= set(families)
        assert families[f"{PREFIX}_requests"].type == "counter"
        assert families[f"{PREFIX}_request_duration_seconds"].type == "histogram"
        assert families[f"{PREFIX}_notification_backlog"].type == "gauge"
        assert value(families, f"{PREFIX}_state_up") == 1

    def test_it_speaks_openmetrics_when_asked(self, api, metrics_on):
        response = api.get(METRICS, HTTP_ACCEPT="application/openmetrics-text; version=1.0.0")
        assert response.status_code == 200
        assert response["Content-Type"].startswith("application/openmetrics-text; "
                                                   "version=1.0.0")
        text = response.content.decode()
        assert text.endswith("# EOF\n")
        assert FAMILIES <= {family.name for family in openmetrics_families(text)}

    def test_it_counts_and_times_each_request_by_route_and_status(self, api, metrics_on):
        before = scrape(api)
        for _ in range(3):
            assert api.get(ECHO).status_code == 200
        after = scrape(api)
        assert requests_of(after, ECHO, 200) - requests_of(before, ECHO, 200) == 3
        count = f"{PREFIX}_request_duration_seconds_count"
        assert value(after, count, route=ECHO, status_class="2xx") \
            - value(before, count, route=ECHO, status_class="2xx") == 3
        # The scrape before this one was counted once it was answered.
        assert requests_of(after, METRICS, 200) - requests_of(before, METRICS, 200) == 1

    def test_it_refuses_other_methods(self, api, metrics_on):
        response = api.post(METRICS)
        assert_error(response, 405, "INVALID_PARAMETER", 'Method "POST" not allowed.',
                     f"POST {METRICS}")
        assert response["Allow"] == "GET, HEAD"


class TokenTests:
    @pytest.fixture
    def token(self, metrics_on, settings):
        settings.METRICS_TOKEN = "scrape-secret"
        return "scrape-secret"

    @pytest.mark.parametrize("authorization", [None, "Bearer wrong-secret", "Bearer ",
                                               "Basic scrape-secret", "Bearer scrape-secret2"])
    def test_it_answers_401_without_the_token(self, api, token, authorization):
        headers = {"HTTP_AUTHORIZATION": authorization} if authorization else {}
        response = api.get(METRICS, **headers)
        assert_unauthenticated(response, f"GET {METRICS}", TOKEN_MISSING)
        assert response["WWW-Authenticate"] == "Bearer"

    def test_it_answers_with_the_token(self, api, token):
        assert FAMILIES <= set(scrape(api, HTTP_AUTHORIZATION=f"Bearer {token}"))
        assert FAMILIES <= set(scrape(api, HTTP_AUTHORIZATION=f"bearer {token}"))


class PullMetricsTests:
    def test_a_pull_with_results_counts_as_found(self, api, metrics_on):
        make_rules(("CarConsumer1", RULE_ID, 1))
        before = scrape(api)
        assert pull(api).status_code == 200
        after = scrape(api)
        assert self._moved(before, after) == {"found": 1}
        assert requests_of(after, PULL, 200) - requests_of(before, PULL, 200) == 1

    def test_a_pull_without_results_counts_as_empty(self, api, metrics_on):
        before = scrape(api)
        assert pull(api, consumer="Nobody").json()["results"] == []
        assert self._moved(before, scrape(api)) == {"empty": 1}

    def test_refused_pulls_count_as_rejected(self, api, metrics_on):
        before = scrape(api)
        assert api.post(PULL, {}, format="json").status_code == 401  # no identity
        assert pull(api, {"orchestrationFlags": "yes"}).status_code == 400
        after = scrape(api)
        assert self._moved(before, after) == {"rejected": 2}
        assert requests_of(after, PULL, 400) - requests_of(before, PULL, 400) == 1

    def test_a_pull_failing_on_the_service_registry_counts_as_failed(self, api, metrics_on,
                                                                     registry):
        registry.fail_with = 500
        make_rules(("CarConsumer1", "ProviderOne|serviceOne|1.0.0", 1))
        before = scrape(api)
        assert pull(api).status_code == 503
        after = scrape(api)
        assert self._moved(before, after) == {"failed": 1}
        labels = {"system": "ServiceRegistry", "operation": "serviceDiscovery/lookup"}
        assert value(after, f"{PREFIX}_outbound_calls_total", **labels, outcome="failed") \
            - value(before, f"{PREFIX}_outbound_calls_total", **labels, outcome="failed") == 1

    @staticmethod
    def _moved(before: dict, after: dict) -> dict[str, float]:
        moved = {}
        for outcome in ("found", "empty", "rejected", "failed"):
            name = f"{PREFIX}_pulls_total"
            change = value(after, name, outcome=outcome) - value(before, name, outcome=outcome)
            if change:
                moved[outcome] = change
        return moved


class SubscriptionMetricsTests:
    def test_a_subscribe_counts_its_request_and_shows_in_the_subscriptions(self, api,
                                                                           metrics_on):
        route = "/serviceorchestration/orchestration/subscribe"
        before = scrape(api)
        assert value(before, f"{PREFIX}_subscriptions", notify_protocol="HTTP") == 0
        assert subscribe(api, subscription_body()).status_code == 201
        assert subscribe(api, subscription_body("pressureInfo")).status_code == 201
        after = scrape(api)
        assert value(after, f"{PREFIX}_subscriptions", notify_protocol="HTTP") == 2
        assert value(after, f"{PREFIX}_subscriptions", notify_protocol="MQTT") == 0
        assert requests_of(after, route, 201) - requests_of(before, route, 201) == 2

    def test_expired_subscriptions_are_not_shown(self, api, metrics_on):
        assert subscribe(api, subscription_body(duration=60)).status_code == 201
        Subscription.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
        assert value(scrape(api), f"{PREFIX}_subscriptions", notify_protocol="HTTP") == 0


class RouteLabelTests:
    def test_path_ids_do_not_become_labels(self, api, metrics_on):
        subscription_id = make_subscription(api)
        unknown_id = str(uuid.uuid4())
        assert api.delete(f"{UNSUBSCRIBE}/{subscription_id}",
                          **as_system("TemperatureConsumer")).status_code == 200
        assert api.get(f"/no/such/{unknown_id}", **as_system("X")).status_code == 404
        assert api.get(f"/other/{unknown_id}/x").status_code == 401
        families = scrape(api)
        label_values = {label for family in families.values() for sample in family.samples
                        for label in sample.labels.values()}
        assert not any(subscription_id in label or unknown_id in label
                       for label in label_values)
        assert requests_of(families, f"{UNSUBSCRIBE}/<str:subscription_id>", 200) >= 1
        assert requests_of(families, "unknown", 404) >= 1
        assert requests_of(families, "unknown", 401) >= 1

    def test_a_request_refused_before_routing_is_labelled_by_its_route(self, api, metrics_on,
                                                                        settings):
        settings.MAX_REQUEST_BODY_BYTES = 10
        before = scrape(api)
        response = api.post(PULL, {"serviceRequirement": {}}, format="json",
                            **as_system("CarConsumer1"))
        assert response.status_code == 413
        assert requests_of(scrape(api), PULL, 413) - requests_of(before, PULL, 413) == 1


class OutboundMetricsTests:
    def _calls(self, families: dict, outcome: str) -> float:
        return value(families, f"{PREFIX}_outbound_calls_total", system="ConsumerAuthorization",
                     operation="authorization/verify", outcome=outcome)

    def test_an_answered_consumer_authorization_call_counts_as_ok(self, api, metrics_on, ca):
        ca.grant("Manager", NAME, STORE)
        before = scrape(api)
        assert create(api).status_code == 201
        after = scrape(api)
        assert (self._calls(after, "ok") - self._calls(before, "ok"),
                self._calls(after, "failed") - self._calls(before, "failed")) == (1, 0)

    def test_an_unreachable_consumer_authorization_counts_as_failed(self, api, metrics_on, ca,
                                                                    settings):
        settings.CONSUMER_AUTHORIZATION_URL = f"http://127.0.0.1:{reserved_port()}"
        before = scrape(api)
        assert create(api).status_code == 403
        after = scrape(api)
        assert (self._calls(after, "ok") - self._calls(before, "ok"),
                self._calls(after, "failed") - self._calls(before, "failed")) == (0, 1)

    def test_a_failed_service_registry_call_counts_as_failed(self, api, metrics_on, settings):
        settings.SERVICE_REGISTRY_URL = f"http://127.0.0.1:{reserved_port()}"
        exchange.opener.cache_clear()
        name = f"{PREFIX}_outbound_calls_total"
        labels = {"system": "ServiceRegistry", "operation": "systemDiscovery/revoke",
                  "outcome": "failed"}
        before = value(scrape(api), name, **labels)
        with pytest.raises(client.ServiceRegistryUnreachable):
            client.system_revoke()
        assert value(scrape(api), name, **labels) - before == 1


class DeliveryMetricsTests:
    def _delivered(self, families: dict, protocol: str) -> float:
        return value(families, f"{PREFIX}_notification_deliveries_total", protocol=protocol,
                     outcome="delivered")

    def test_a_delivery_counts_and_observes_its_time_since_creation(self, api, metrics_on,
                                                                     http_sink):
        delivery = make_delivery("HTTP", http_sink.properties(),
                                 created_at=timezone.now() - timedelta(seconds=40))
        before = scrape(api)
        assert delivery_send(delivery.id) == NotificationDelivery.Status.DELIVERED
        after = scrape(api)
        assert self._delivered(after, "HTTP") - self._delivered(before, "HTTP") == 1
        name = f"{PREFIX}_notification_delivery_seconds"

        def moved(sample: str, **labels: str) -> float:
            return value(after, f"{name}{sample}", protocol="HTTP", **labels) \
                - value(before, f"{name}{sample}", protocol="HTTP", **labels)

        assert moved("_count") == 1
        assert 40 <= moved("_sum") < 60
        assert (moved("_bucket", le="30.0"), moved("_bucket", le="60.0")) == (0, 1)

    def test_a_batch_of_mqtt_deliveries_counts_each(self, api, metrics_on, mqtt_receiver):
        deliveries = [make_delivery("MQTT", {"topic": mqtt_receiver.topic}) for _ in range(3)]
        before = scrape(api)
        statuses = deliveries_send([delivery.id for delivery in deliveries])
        assert set(statuses.values()) == {NotificationDelivery.Status.DELIVERED}
        after = scrape(api)
        assert self._delivered(after, "MQTT") - self._delivered(before, "MQTT") == 3

    def test_a_transient_failure_counts_as_retried_and_stays_in_the_backlog(
            self, api, metrics_on, http_sink):
        http_sink.status = 500
        delivery = make_delivery("HTTP", http_sink.properties())
        before = scrape(api)
        assert delivery_send(delivery.id) == NotificationDelivery.Status.PENDING
        after = scrape(api)
        name = f"{PREFIX}_notification_deliveries_total"
        assert value(after, name, protocol="HTTP", outcome="retried") \
            - value(before, name, protocol="HTTP", outcome="retried") == 1
        assert value(after, f"{PREFIX}_notification_backlog", status="PENDING",
                     protocol="HTTP") == 1
        assert value(after, f"{PREFIX}_notification_backlog_due") == 0  # after its backoff

    def test_the_backlog_shows_unfinished_deliveries_only(self, api, metrics_on):
        now = timezone.now()
        make_delivery("MQTT", {"topic": "a"}, created_at=now - timedelta(seconds=90))
        make_delivery("HTTP", {"address": "127.0.0.1", "port": 9, "method": "POST",
                               "path": "/"}, status=NotificationDelivery.Status.SENDING)
        make_delivery("MQTT", {"topic": "b"}, status=NotificationDelivery.Status.DELIVERED,
                      created_at=now - timedelta(hours=5))
        families = scrape(api)
        backlog = {(sample.labels["status"], sample.labels["protocol"]): sample.value
                   for sample in families[f"{PREFIX}_notification_backlog"].samples}
        assert {key: count for key, count in backlog.items() if count} == {
            ("PENDING", "MQTT"): 1, ("SENDING", "HTTP"): 1}
        assert len(backlog) == 8  # every status and protocol, zeros included
        assert value(families, f"{PREFIX}_notification_backlog_due") == 1
        assert 90 <= value(families, f"{PREFIX}_notification_backlog_oldest_seconds") < 120


@pytest.mark.django_db(transaction=True)
class ProcessesTests:
    """The real gunicorn (2 worker processes) and a real Celery worker sharing one metrics
    directory: one scrape adds up every process's counts."""

    def test_one_scrape_adds_up_the_counts_of_every_process(self, tmp_path, http_sink):
        directory = tmp_path / "metrics"
        directory.mkdir()
        stopped_pid = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1
        _write_echo_count(directory / f"counter_{stopped_pid}.db", 1000)  # a previous run
        _write_echo_count(directory / f"counter_{os.getpid()}.db", 7)  # a running process
        env = {"METRICS_ENABLED": "true", "PROMETHEUS_MULTIPROC_DIR": str(directory),
               "WEB_CONCURRENCY": "2"}
        queue = f"so-test-metrics-{uuid.uuid4().hex[:8]}"
        worker = start_worker("metrics", [f"{queue}.http"], worker_environment(queue, **env),
                              tmp_path / "worker.log")
        try:
            with gunicorn_process(env, tmp_path / "gunicorn.log") as (master, port):
                assert not (directory / f"counter_{stopped_pid}.db").exists()
                echoes = _echo_until_both_workers_served(port, directory, master.pid)
                _deliver_on_the_worker(http_sink, queue)
                # The worker counts a delivery just after it has recorded it as DELIVERED.
                scrapes = []

                def delivery_counted() -> bool:
                    scrapes.append(_get(port, METRICS))
                    return _delivery_observed(*scrapes[-1])

                wait_for(delivery_counted, timeout=10, what="the worker's counts of the delivery")
                status, text = scrapes[-1]
        finally:
            stop_worker(worker)
            forget_queues(f"{queue}.http")
        assert status == 200
        families = {family.name: family for family in text_string_to_metric_families(text)}
        assert requests_of(families, ECHO, 200) == echoes + 7
        assert value(families, f"{PREFIX}_notification_deliveries_total", protocol="HTTP",
                     outcome="delivered") == 1  # counted by the Celery worker
        assert value(families, f"{PREFIX}_notification_delivery_seconds_count",
                     protocol="HTTP") == 1


def _write_echo_count(path: Path, count: float) -> None:
    """A counter file as prometheus_client writes it for a process that answered `count`
    echoes."""
    labels = (ECHO, "200")
    file = MmapedDict(str(path))
    file.write_value(mmap_key(f"{PREFIX}_requests", f"{PREFIX}_requests_total",
                              ("route", "status"), labels, REQUESTS._documentation), count, 0.0)
    file.close()


def _delivery_observed(status: int, text: str) -> bool:
    families = {family.name: family for family in text_string_to_metric_families(text)}
    return status == 200 and value(families, f"{PREFIX}_notification_delivery_seconds_count",
                                   protocol="HTTP") > 0


def _get(port: int, path: str) -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        connection.request("GET", path)
        answer = connection.getresponse()
        return answer.status, answer.read().decode()
    finally:
        connection.close()


def _echo_counts_by_process(directory: Path) -> dict[int, float]:
    counts = {}
    for path in directory.glob("counter_*.db"):
        for metric in MultiProcessCollector.merge([str(path)]):
            for sample in metric.samples:
                if sample.name == f"{PREFIX}_requests_total" and sample.labels == {
                        "route": ECHO, "status": "200"}:
                    counts[int(path.stem.rpartition("_")[2])] = sample.value
    return counts


def _echo_until_both_workers_served(port: int, directory: Path, master: int) -> int:
    """Echo from several threads, a connection per request, until both workers' files count
    echoes; returns how many were sent."""
    sent, lock = 0, threading.Lock()

    def echo_batch() -> None:
        nonlocal sent
        for _ in range(20):
            if _get(port, ECHO)[0] == 200:  # the others are not in the compared count
                with lock:
                    sent += 1

    deadline = time.monotonic() + 60
    while True:
        assert run_together(*[echo_batch] * 4) == [None] * 4
        workers = {pid for pid, count in _echo_counts_by_process(directory).items()
                   if count and pid not in (master, os.getpid())}
        if len(workers) >= 2:
            return sent
        assert time.monotonic() < deadline, f"echoes reached only {workers}"


def _deliver_on_the_worker(http_sink, queue: str) -> None:
    delivery = make_delivery("HTTP", http_sink.properties())
    eager, celery_app.conf.task_always_eager = celery_app.conf.task_always_eager, False
    try:
        celery_app.tasks["notifications.deliver"].apply_async(
            args=[str(delivery.id)], kwargs={"protocol": "HTTP"}, queue=f"{queue}.http")
    finally:
        celery_app.conf.task_always_eager = eager
    wait_for(lambda: NotificationDelivery.objects.get(id=delivery.id).status == "DELIVERED",
             timeout=30, what="the worker to deliver")
