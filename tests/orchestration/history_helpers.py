"""Builders and request helpers for the history tests: jobs are written directly (no pull)."""
import datetime as dt
import uuid
from typing import Any

from orchestration.models import OrchestrationJob
from tests.helpers import SYSOP

HISTORY_QUERY = "/serviceorchestration/orchestration/mgmt/history/query"
EPOCH = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def make_job(*, minute: int = 0, **fields: Any) -> OrchestrationJob:
    """A finished DONE PULL job of `Consumer1` created `minute` minutes after EPOCH, started
    one second and finished two seconds later; `fields` override any column."""
    created = EPOCH + dt.timedelta(minutes=minute)
    values: dict[str, Any] = {
        "type": OrchestrationJob.Type.PULL, "status": OrchestrationJob.Status.DONE,
        "requester": "Consumer1", "target": "Consumer1", "service_definition": "serviceDef1",
        "message": "1 local result(s)", "result_count": 1, "created_at": created,
        "started_at": created + dt.timedelta(seconds=1),
        "finished_at": created + dt.timedelta(seconds=2),
    }
    return OrchestrationJob.objects.create(**{**values, **fields})


def make_push_job(*, subscription_id: uuid.UUID | None = None, **fields: Any) -> OrchestrationJob:
    return make_job(type=OrchestrationJob.Type.PUSH,
                    subscription_id=subscription_id or uuid.uuid4(), **fields)


def query_history(api, body=None, headers=SYSOP):
    """POST the body as JSON; None: no body at all."""
    if body is None:
        return api.post(HISTORY_QUERY, **headers)
    return api.post(HISTORY_QUERY, body, format="json", **headers)
