"""Push management's trigger (reference-simple §6.9, §8.2): a PUSH job per selected
subscription, queued PENDING and run by a Celery task that claims it, pushes the
subscription's current result (forced) and finishes it DONE or ERROR. Unlike the reference, no
job stays PENDING or IN_PROGRESS forever (docs/push-management.md, "Job lifecycle").
"""
import datetime as dt
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from conventions import names
from conventions.exceptions import InvalidParameter
from conventions.uuids import require_uuid_element
from database.advisory_locks import advisory_locks
from database.transaction_retry import retry_on_conflict
from orchestration.models import OrchestrationJob
from subscriptions.models import Subscription
from subscriptions.services.pushing import subscription_push_queue

logger = logging.getLogger(__name__)

Status = OrchestrationJob.Status
ACTIVE = (Status.PENDING, Status.IN_PROGRESS)
ABANDONED_SUPERSEDED = ("Abandoned: not finished in time (its task or worker was lost); "
                        "a newer trigger queued another job")
# At most this many stale PENDING jobs are enqueued again per sweep (the rest next time).
SWEEP_BATCH = 500
# The Celery task that runs one job (subscriptions/tasks.py).
RUN_PUSH_JOB_TASK = "subscriptions.run_push_job"


@dataclass(frozen=True)
class TriggerRequest:
    target_systems: tuple[str, ...]
    subscription_ids: tuple[uuid.UUID, ...]


def _first_duplicate(values: Sequence) -> object | None:
    seen = set()
    for value in values:
        if value in seen:
            return value
        seen.add(value)
    return None


def parse_trigger_request(data: dict | None) -> TriggerRequest:
    """The validated trigger body, with the reference's messages in its order. Both lists
    empty is refused: the reference would then push every subscription the requester owns,
    which an empty body asks for too easily (docs/push-management.md)."""
    if data is None:
        raise InvalidParameter("Request payload is missing")
    targets = tuple(names.system_name(value) for value in names.without_blanks(
        data.get("targetSystems"), "Target system list contains null or empty element"))
    duplicate = _first_duplicate(targets)
    if duplicate is not None:
        raise InvalidParameter(f"Duplicated target system name: {duplicate}")
    ids = tuple(require_uuid_element(value) for value in names.without_blanks(
        data.get("subscriptionIds"), "Subscription id list contains null or empty element"))
    duplicate = _first_duplicate(ids)
    if duplicate is not None:
        raise InvalidParameter(f"Duplicated subscription id: {duplicate}")
    if not targets and not ids:
        raise InvalidParameter("Target system list and subscription id list are both empty")
    return TriggerRequest(targets, ids)


def _selected(trigger: TriggerRequest, now: dt.datetime) -> list[Subscription]:
    """The subscription ids when given (unknown ones ignored), else the subscriptions for
    the target systems, whoever owns them. Expired ones are never pushed."""
    subscriptions = Subscription.objects.exclude(expires_at__lte=now)
    if trigger.subscription_ids:
        subscriptions = subscriptions.filter(id__in=trigger.subscription_ids)
    else:
        subscriptions = subscriptions.filter(target__in=trigger.target_systems)
    return list(subscriptions.order_by("created_at", "id"))


def _stale(now: dt.datetime) -> Q:
    """Active jobs that are not going anywhere: PENDING (its task lost) or IN_PROGRESS (its
    worker stopped) for longer than PUSH_JOB_STALE_SECONDS."""
    before = now - dt.timedelta(seconds=settings.PUSH_JOB_STALE_SECONDS)
    return (Q(status=Status.PENDING, created_at__lt=before)
            | Q(status=Status.IN_PROGRESS, started_at__lt=before))


def _push_jobs() -> QuerySet[OrchestrationJob]:
    return OrchestrationJob.objects.filter(type=OrchestrationJob.Type.PUSH)


@retry_on_conflict
def _jobs_queue(*, requester: str, trigger: TriggerRequest) -> tuple[list, list]:
    now = timezone.now()
    with transaction.atomic():
        subscriptions = _selected(trigger, now)
        # Two triggers of one subscription at once must not both queue a job for it.
        advisory_locks("push-job", [str(s.id) for s in subscriptions])
        active = _push_jobs().filter(subscription_id__in=[s.id for s in subscriptions],
                                     status__in=ACTIVE)
        fresh = {job.subscription_id: job for job in active.exclude(_stale(now))
                 .order_by("created_at")}
        needing = [s for s in subscriptions if s.id not in fresh]
        active.filter(subscription_id__in=[s.id for s in needing]).update(
            status=Status.ERROR, message=ABANDONED_SUPERSEDED, finished_at=now)
        queued = OrchestrationJob.objects.bulk_create([OrchestrationJob(
            type=OrchestrationJob.Type.PUSH, status=Status.PENDING, requester=requester,
            target=s.target, service_definition=s.service_definition, subscription_id=s.id,
            created_at=now) for s in needing])
        for job in queued:
            transaction.on_commit(partial(push_job_enqueue, job_id=job.id))
    return [fresh[s.id] for s in subscriptions if s.id in fresh], queued


def push_trigger(*, requester: str, trigger: TriggerRequest) -> list[OrchestrationJob]:
    """Queue a forced push of each selected subscription: its PENDING/IN_PROGRESS job when it
    has a fresh one (reused), else a new PENDING job, enqueued after the commit. Returns the
    reused jobs, then the new ones, as they are now (without a broker the new ones have
    already run)."""
    reused, queued = _jobs_queue(requester=requester, trigger=trigger)
    jobs = reused + queued
    current = OrchestrationJob.objects.in_bulk([job.id for job in jobs])
    return [current.get(job.id, job) for job in jobs]


def push_job_enqueue(*, job_id: uuid.UUID) -> bool:
    """Hand the job to a worker (without a broker: run it here, now). Never raises: the job
    is committed, so when the broker is down (or the eager run fails) the sweep enqueues it
    again. Returns whether it was handed over. The task is looked up by name in Celery's
    registry (subscriptions/apps.py has every process register it), so that this module and
    subscriptions/tasks.py, which runs the job with push_job_run, do not import each other."""
    try:
        current_app.tasks[RUN_PUSH_JOB_TASK].apply_async(args=[str(job_id)])
    except Exception:  # noqa: BLE001 - broker down, or an eager run raising
        logger.warning("Could not enqueue push job %s; the sweep will enqueue it again",
                       job_id, exc_info=True)
        return False
    return True


# --- Running a job (the task) ----------------------------------------------------------------

class _JobFailed(Exception):
    pass


def push_job_run(*, job_id: uuid.UUID | str) -> str | None:
    """Claim the PENDING job (only one run of it proceeds), push its subscription's current
    result and finish the job. Returns its final status, None when it was not claimed
    (missing, already taken, or given up)."""
    now = timezone.now()
    claimed = _push_jobs().filter(id=job_id, status=Status.PENDING).update(
        status=Status.IN_PROGRESS, started_at=now)
    if not claimed:
        logger.info("Push job %s is not pending (anymore); nothing to do", job_id)
        return None
    job = OrchestrationJob.objects.get(id=job_id)
    try:
        _push_for(job)
    except Exception as exc:  # noqa: BLE001 - every failure ends the job, with its text
        if not isinstance(exc, (_JobFailed, InvalidParameter)):
            logger.exception("Push job %s failed", job_id)
        message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        _push_jobs().filter(id=job_id, status=Status.IN_PROGRESS).update(
            status=Status.ERROR, message=message, finished_at=timezone.now())
    return OrchestrationJob.objects.filter(id=job_id).values_list("status", flat=True).first()


@retry_on_conflict
def _push_for(job: OrchestrationJob) -> None:
    if job.subscription_id is None:
        raise _JobFailed(f"Orchestration job {job.id} has no subscription id")
    with transaction.atomic():
        subscription = Subscription.objects.select_for_update().filter(
            id=job.subscription_id).first()
        if subscription is None or (subscription.expires_at is not None
                                    and subscription.expires_at <= job.started_at):
            raise _JobFailed(f"Orchestration job {job.id} has no subscription with "
                             f"{job.subscription_id} subscription id")
        subscription_push_queue(subscription, now=job.started_at, job=job)


# --- The sweep ---------------------------------------------------------------------------------

def push_jobs_sweep(*, now: dt.datetime | None = None) -> int:
    """Periodic: give up jobs that outlived their bounds, and enqueue again the PENDING
    jobs whose task seems lost. Returns how many were enqueued."""
    now = now or timezone.now()
    stale = now - dt.timedelta(seconds=settings.PUSH_JOB_STALE_SECONDS)
    timeout = now - dt.timedelta(seconds=settings.PUSH_JOB_TIMEOUT_SECONDS)
    _push_jobs().filter(status=Status.IN_PROGRESS, started_at__lt=stale).update(
        status=Status.ERROR, finished_at=now,
        message=f"Abandoned: not finished within {settings.PUSH_JOB_STALE_SECONDS} s of its "
                "start (its worker stopped)")
    _push_jobs().filter(status=Status.PENDING, created_at__lt=timeout).update(
        status=Status.ERROR, finished_at=now,
        message=f"Abandoned: no worker started it within {settings.PUSH_JOB_TIMEOUT_SECONDS} s")
    lost = list(_push_jobs().filter(status=Status.PENDING, created_at__lt=stale)
                .order_by("created_at").values_list("id", flat=True)[:SWEEP_BATCH])
    return sum(push_job_enqueue(job_id=job_id) for job_id in lost)
