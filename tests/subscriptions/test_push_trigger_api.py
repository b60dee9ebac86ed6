"""Push management's trigger (reference-simple §6.9, §8.2, black-box PT1–PT9): queued PUSH
jobs, run by a task that claims them, and the sweep that keeps any from being stuck."""
import datetime as dt
import json
import uuid

import pytest
from django.utils import timezone

from notifications.models import NotificationDelivery
from orchestration.models import OrchestrationJob
from subscriptions.models import Subscription
from subscriptions.push_jobs import push_job_run, push_jobs_sweep
from tests.concurrency import wait_for
from tests.factories import make_push_subscription, make_rules, make_subscription
from tests.helpers import SYSOP, as_system, assert_error, assert_forbidden
from tests.subscriptions.helpers import PUSH_TRIGGER, push_element

ORIGIN = f"POST {PUSH_TRIGGER}"
CONSUMER = "TemperatureConsumer"
INSTANCE = "P|temperatureInfo|1.0.0"
Status = OrchestrationJob.Status


def trigger(api, body, headers=SYSOP):
    return api.post(PUSH_TRIGGER, body, format="json", **headers)


def age(job_id: str, seconds: int, **fields) -> None:
    """Make the job look `seconds` old (created, and started when IN_PROGRESS)."""
    then = timezone.now() - dt.timedelta(seconds=seconds)
    OrchestrationJob.objects.filter(id=job_id).update(created_at=then, **fields)


@pytest.mark.django_db
class PushTriggerValidationTests:
    @pytest.mark.parametrize("body, message", [
        ({"targetSystems": ["system1", None]},
         "Target system list contains null or empty element"),  # PT1
        ({"targetSystems": ["System1", "system1"]}, "Duplicated target system name: System1"),
        ({"targetSystems": ["inv@lid"]},
         "The specified system name does not match the naming convention: Inv@lid"),  # PT3
        ({"subscriptionIds": ["11111111-1111-1111-1111-111111111111", ""]},
         "Subscription id list contains null or empty element"),  # PT4
        ({"subscriptionIds": ["11111111-1111-1111-1111-111111111111",
                              " 11111111-1111-1111-1111-111111111111"]},
         "Duplicated subscription id: 11111111-1111-1111-1111-111111111111"),  # PT5
        ({"subscriptionIds": ["6-7"]}, "Invalid UUID id"),  # PT6
        ({}, "Target system list and subscription id list are both empty"),  # not PT8
        ({"targetSystems": [], "subscriptionIds": None},
         "Target system list and subscription id list are both empty"),
        (None, "Target system list and subscription id list are both empty"),  # no body
    ])
    def test_it_refuses_invalid_requests(self, api, body, message):
        assert_error(trigger(api, body), 400, "INVALID_PARAMETER", message, ORIGIN)
        assert not OrchestrationJob.objects.exists()

    def test_it_refuses_a_null_body(self, api):
        response = api.post(PUSH_TRIGGER, "null", content_type="application/json", **SYSOP)
        assert_error(response, 400, "INVALID_PARAMETER", "Request payload is missing", ORIGIN)

    def test_it_needs_management_permission(self, api, settings):
        settings.MANAGEMENT_POLICY = "sysop-only"
        assert_forbidden(trigger(api, {"targetSystems": [CONSUMER]}, as_system(CONSUMER)), ORIGIN)


@pytest.mark.django_db
class PushTriggerTests:
    def test_it_queues_a_pending_push_job_per_subscription(self, api, settings):  # PT7
        settings.MANAGEMENT_WHITELIST = ["PlantManager"]
        subscription = make_push_subscription(api)
        response = trigger(api, {"targetSystems": ["temperature-consumer"]},
                           as_system("PlantManager"))
        assert response.status_code == 201, response.content
        [job] = response.json()["jobs"]
        assert {key: job[key] for key in ("type", "status", "requesterSystem", "targetSystem",
                                          "serviceDefinition", "subscriptionId", "startedAt",
                                          "finishedAt")} == {
            "type": "PUSH", "status": "PENDING", "requesterSystem": "PlantManager",
            "targetSystem": CONSUMER, "serviceDefinition": "temperatureInfo",
            "subscriptionId": subscription, "startedAt": None, "finishedAt": None}
        assert OrchestrationJob.objects.get(id=job["id"]).status == Status.PENDING

    def test_it_runs_the_job_after_the_commit_without_a_broker(
            self, api, http_sink, django_capture_on_commit_callbacks):
        make_rules((CONSUMER, INSTANCE, 1))
        subscription = make_push_subscription(api, notify={"protocol": "HTTP",
                                                           "properties": http_sink.properties()})
        with django_capture_on_commit_callbacks(execute=True):
            job_id = trigger(api, {"subscriptionIds": [subscription]}).json()["jobs"][0]["id"]
        job = OrchestrationJob.objects.get(id=job_id)
        assert (job.status, job.message, job.result_count) == (Status.DONE,
                                                               "1 local result(s)", 1)
        assert job.started_at is not None and job.finished_at >= job.started_at
        delivery = NotificationDelivery.objects.get()
        assert (str(delivery.subscription_id), delivery.receiver) == (subscription, CONSUMER)
        wait_for(lambda: http_sink.requests, what="the notification")
        assert [r["serviceInstanceId"] for r in http_sink.requests[0].json()["results"]] == [
            INSTANCE]

    def test_it_pushes_even_when_the_result_did_not_change(
            self, api, django_capture_on_commit_callbacks):
        subscription = make_push_subscription(api)
        for _ in range(2):
            with django_capture_on_commit_callbacks(execute=False) as callbacks:
                trigger(api, {"subscriptionIds": [subscription]})
            for callback in callbacks[:1]:  # the job; not the deliveries' sends
                callback()
        assert list(OrchestrationJob.objects.values_list("status", flat=True)) == [
            Status.DONE] * 2
        assert NotificationDelivery.objects.count() == 2

    def test_it_reuses_a_pending_job_of_the_subscription(self, api):  # PT9
        first, second = (make_push_subscription(api, "ConsumerA"),
                         make_push_subscription(api, "ConsumerB"))
        queued = trigger(api, {"subscriptionIds": [first]}).json()["jobs"][0]
        response = trigger(api, {"subscriptionIds": [second, first]})
        assert response.status_code == 201
        jobs = response.json()["jobs"]
        assert jobs[0] == queued  # reused first, then the new one
        assert jobs[1]["subscriptionId"] == second and jobs[1]["status"] == "PENDING"
        assert OrchestrationJob.objects.count() == 2

    def test_it_answers_201_with_only_reused_jobs(self, api):
        subscription = make_push_subscription(api)
        queued = trigger(api, {"subscriptionIds": [subscription]}).json()["jobs"]
        again = trigger(api, {"subscriptionIds": [subscription]})
        assert (again.status_code, again.json()["jobs"]) == (201, queued)

    def test_it_does_not_reuse_a_stale_job(self, api, settings):
        subscription = make_push_subscription(api)
        stale = trigger(api, {"subscriptionIds": [subscription]}).json()["jobs"][0]["id"]
        age(stale, settings.PUSH_JOB_STALE_SECONDS + 1)
        [new] = trigger(api, {"subscriptionIds": [subscription]}).json()["jobs"]
        assert new["id"] != stale and new["status"] == "PENDING"
        old = OrchestrationJob.objects.get(id=stale)
        assert old.status == Status.ERROR and old.message.startswith("Abandoned: ")
        assert push_job_run(job_id=stale) is None  # its lost task, if it ever runs, does nothing

    def test_it_selects_by_ids_before_targets_and_ignores_unknown_ids(self, api):
        first = make_push_subscription(api, "ConsumerA")
        make_push_subscription(api, "ConsumerB")
        body = {"subscriptionIds": [first, str(uuid.uuid4())], "targetSystems": ["ConsumerB"]}
        jobs = trigger(api, body).json()["jobs"]
        assert [job["subscriptionId"] for job in jobs] == [first]

    def test_it_selects_every_subscription_for_the_targets_whoever_owns_them(self, api):
        mine = make_push_subscription(api, "ConsumerA")
        own = make_subscription(api, push_element("ConsumerA", "pressureInfo"), "ConsumerA")
        make_push_subscription(api, "ConsumerB")
        jobs = trigger(api, {"targetSystems": ["ConsumerA"]}).json()["jobs"]
        assert {job["subscriptionId"] for job in jobs} == {mine, own}

    def test_it_skips_expired_subscriptions(self, api):
        subscription = make_push_subscription(api)
        Subscription.objects.update(expires_at=timezone.now() - dt.timedelta(seconds=1))
        response = trigger(api, {"subscriptionIds": [subscription]})
        assert (response.status_code, response.json()) == (201, {"jobs": []})


@pytest.mark.django_db
class PushJobRunTests:
    def test_it_fails_the_job_when_its_subscription_is_gone(self, api):  # D5
        subscription = make_push_subscription(api)
        job_id = trigger(api, {"subscriptionIds": [subscription]}).json()["jobs"][0]["id"]
        Subscription.objects.all().delete()
        assert push_job_run(job_id=job_id) == Status.ERROR
        job = OrchestrationJob.objects.get()
        assert job.message == (f"Orchestration job {job_id} has no subscription with "
                               f"{subscription} subscription id")
        assert job.finished_at is not None and not NotificationDelivery.objects.exists()

    def test_it_fails_the_job_with_the_text_of_a_refusal(self, api):
        subscription = make_push_subscription(api)
        job_id = trigger(api, {"subscriptionIds": [subscription]}).json()["jobs"][0]["id"]
        Subscription.objects.update(orchestration_request={"qosRequirements": {
            "maxLatencyMs": "5"}})
        assert push_job_run(job_id=job_id) == Status.ERROR
        assert OrchestrationJob.objects.get().message == (
            "Quality of service requirements are present, but QoS support is disabled")

    def test_it_runs_a_job_once(self, api):
        subscription = make_push_subscription(api)
        job_id = trigger(api, {"subscriptionIds": [subscription]}).json()["jobs"][0]["id"]
        assert push_job_run(job_id=job_id) == Status.DONE
        assert push_job_run(job_id=job_id) is None
        assert NotificationDelivery.objects.count() == 1


@pytest.mark.django_db
class PushJobSweepTests:
    def test_it_enqueues_a_lost_pending_job_again(self, api, settings,
                                                  django_capture_on_commit_callbacks):
        subscription = make_push_subscription(api)
        job_id = trigger(api, {"subscriptionIds": [subscription]}).json()["jobs"][0]["id"]
        assert push_jobs_sweep() == 0  # fresh: its task may still come
        age(job_id, settings.PUSH_JOB_STALE_SECONDS + 1)
        with django_capture_on_commit_callbacks():  # the delivery's send is not the point
            assert push_jobs_sweep() == 1  # eager here: it ran
        assert OrchestrationJob.objects.get().status == Status.DONE

    def test_it_gives_up_a_job_stuck_in_progress(self, api, settings):
        subscription = make_push_subscription(api)
        job_id = trigger(api, {"subscriptionIds": [subscription]}).json()["jobs"][0]["id"]
        then = timezone.now() - dt.timedelta(seconds=settings.PUSH_JOB_STALE_SECONDS + 1)
        age(job_id, settings.PUSH_JOB_STALE_SECONDS + 1, status=Status.IN_PROGRESS,
            started_at=then)
        push_jobs_sweep()
        job = OrchestrationJob.objects.get()
        assert job.status == Status.ERROR and job.finished_at is not None
        assert job.message == (f"Abandoned: not finished within "
                               f"{settings.PUSH_JOB_STALE_SECONDS} s of its start (its worker "
                               "stopped)")

    def test_it_gives_up_a_job_no_worker_started(self, api, settings):
        subscription = make_push_subscription(api)
        job_id = trigger(api, {"subscriptionIds": [subscription]}).json()["jobs"][0]["id"]
        age(job_id, settings.PUSH_JOB_TIMEOUT_SECONDS + 1)
        assert push_jobs_sweep() == 0
        job = OrchestrationJob.objects.get()
        assert (job.status, job.message) == (
            Status.ERROR, f"Abandoned: no worker started it within "
                          f"{settings.PUSH_JOB_TIMEOUT_SECONDS} s")

    def test_it_leaves_pull_jobs_alone(self, settings):
        then = timezone.now() - dt.timedelta(days=1)
        OrchestrationJob.objects.create(type="PULL", status=Status.IN_PROGRESS,
                                        requester="A", target="A", created_at=then,
                                        started_at=then)
        push_jobs_sweep()
        assert OrchestrationJob.objects.get().status == Status.IN_PROGRESS

    def test_it_is_scheduled_by_beat(self, settings):
        entry = settings.CELERY_BEAT_SCHEDULE["sweep-push-jobs"]
        assert entry == {"task": "subscriptions.sweep_push_jobs",
                         "schedule": float(settings.PUSH_JOB_SWEEP_INTERVAL_SECONDS)}


@pytest.mark.django_db(transaction=True)
class PushTriggerWithWorkerTests:
    def test_it_pushes_through_the_worker_and_finishes_the_job(self, api, celery_worker,
                                                               http_sink):
        make_rules((CONSUMER, INSTANCE, 1))
        notify = {"protocol": "HTTP", "properties": http_sink.properties("put", "/notify")}
        subscription = make_push_subscription(api, notify=notify)
        [job] = trigger(api, {"targetSystems": [CONSUMER]}).json()["jobs"]
        assert job["status"] in ("PENDING", "IN_PROGRESS", "DONE")
        wait_for(lambda: OrchestrationJob.objects.get(id=job["id"]).status == Status.DONE,
                 what="the job done")
        assert OrchestrationJob.objects.get(id=job["id"]).message == "1 local result(s)"
        wait_for(lambda: http_sink.requests, what="the notification")
        request = http_sink.requests[0]
        assert (request.method, request.path) == ("PUT", "/notify")
        assert [r["serviceInstanceId"] for r in request.json()["results"]] == [INSTANCE]
        wait_for(lambda: NotificationDelivery.objects.get().status == "DELIVERED",
                 what="the delivery recorded")
        assert str(NotificationDelivery.objects.get().subscription_id) == subscription

    def test_it_delivers_over_mqtt(self, api, celery_worker, mqtt_receiver):
        make_rules((CONSUMER, INSTANCE, 1))
        make_push_subscription(api, notify={"protocol": "MQTT",
                                            "properties": {"topic": mqtt_receiver.topic}})
        trigger(api, {"targetSystems": [CONSUMER]})
        body = json.loads(mqtt_receiver.get().payload)
        assert body["receiver"] == CONSUMER
        assert [r["serviceInstanceId"] for r in body["payload"]["results"]] == [INSTANCE]
