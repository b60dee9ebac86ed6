"""Pushing a subscription's result: what makes two results the same for the subscriber
(`fingerprint`), the notification's body, and one push written in the caller's transaction
(`subscription_push_queue`: a subscribe with trigger, push management's job, a subscription
evaluated alone). Batch evaluation (evaluation.py) writes the same rows in bulk."""
import datetime as dt
import hashlib
import json

from django.conf import settings
from rest_framework.utils.encoders import JSONEncoder

from notifications.outbox import delivery_create
from orchestration.models import OrchestrationJob
from orchestration.pull.normalization import parse_orchestration_request
from orchestration.pull.response_data import orchestration_response_data
from orchestration.pull.services import orchestrate_recorded
from orchestration.pull.types import OrchestrationResult
from subscriptions.models import Subscription


def fingerprint(result: OrchestrationResult) -> str:
    """What makes two results the same for the subscriber: the results and warnings without
    the parts that differ at every run (token values, reservation end)."""
    return _fingerprint(orchestration_response_data(result))


def _fingerprint(data: dict) -> str:
    """`fingerprint` of a result's response data (which it changes: pass a copy you keep no
    use for)."""
    for entry in data["results"] or ():
        tokens = entry.pop("authorizationTokens", None)
        if tokens:
            entry["tokenScopes"] = {policy: sorted(scopes) for policy, scopes in tokens.items()}
        entry["exclusive"] = entry.pop("exclusiveUntil", None) is not None
    text = json.dumps(data, cls=JSONEncoder, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


class Rendering:
    """The fingerprint and the response data (as JSON decodes it) of the results of one
    evaluation batch, computed once for all results that render alike: a change usually
    gives many subscribers the same answer."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[str, dict]] = {}

    def __call__(self, result: OrchestrationResult) -> tuple[str, dict]:
        text = json.dumps(orchestration_response_data(result), cls=JSONEncoder)
        rendered = self._seen.get(text)
        if rendered is None:
            rendered = self._seen[text] = (_fingerprint(json.loads(text)), json.loads(text))
        return rendered


def push_message(subscription: Subscription, response: dict) -> dict:
    """The notification of `response` (a result's response data, JSON-decoded): MQTT
    subscribers get it in the reference's envelope."""
    if subscription.notify_protocol.startswith("MQTT"):
        return {"receiver": subscription.target, "sender": settings.SYSTEM_NAME,
                "payload": response}
    return response


def subscription_push_queue(subscription: Subscription, *, now: dt.datetime,
                            job: OrchestrationJob | None = None) -> None:
    """Orchestrate for real (reservations, tokens), record the PUSH job (a new one, or the
    queued `job` of push management's trigger), queue the notification and remember what
    was pushed. Runs inside the caller's transaction."""
    request = parse_orchestration_request(subscription.orchestration_request)
    if job is None:
        job = OrchestrationJob(type=OrchestrationJob.Type.PUSH, requester=subscription.owner,
                               target=subscription.target,
                               service_definition=subscription.service_definition,
                               subscription_id=subscription.id, created_at=now, started_at=now)
    result = orchestrate_recorded(job, request)
    printed, response = Rendering()(result)
    delivery_create(subscription_id=subscription.id, protocol=subscription.notify_protocol,
                    properties=subscription.notify_properties, receiver=subscription.target,
                    payload=push_message(subscription, response),
                    expires_at=subscription.expires_at)
    subscription.last_fingerprint = printed
    subscription.last_pushed_at = now
    subscription.needs_evaluation = False
    subscription.save(update_fields=["last_fingerprint", "last_pushed_at", "needs_evaluation"])

