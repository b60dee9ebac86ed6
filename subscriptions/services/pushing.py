"""Pushing a subscription's result: what makes two results the same for the subscriber
(`fingerprint`), the notification's body, and one push written in the caller's transaction
(`subscription_push_queue`: a subscribe with trigger, push management's job, a result that
committing changes), and what every push writes after its job (`pushes_record`, for one or
a batch: evaluation.py)."""
import datetime as dt
import hashlib
import json
from collections import defaultdict

from django.conf import settings
from rest_framework.utils.encoders import JSONEncoder

from conventions.encoded_json import EncodedJSON, encoded, encoded_object
from database.expressions import AnyOf
from notifications.outbox import Notification, deliveries_create
from orchestration.models import OrchestrationJob
from orchestration.pull.normalization import parse_orchestration_request
from orchestration.pull.serializers import orchestration_response_data
from orchestration.pull.services import orchestrate_recorded
from orchestration.pull.types import OrchestrationResult
from subscriptions.models import Subscription
from subscriptions.services.flagging import flags_clear


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
    """The fingerprint and the response data (as JSON decodes it, with its encoding) of the
    results of one evaluation batch, computed once for all results that render alike: a
    change usually gives many subscribers the same answer."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[str, EncodedJSON]] = {}
        # Results given more than once (previews shared: orchestration.pull.services
        # `PreviewSharing`), by id, each kept so that its id stays its own.
        self._given: dict[int, tuple[OrchestrationResult, tuple[str, EncodedJSON]]] = {}

    def __call__(self, result: OrchestrationResult) -> tuple[str, EncodedJSON]:
        given = self._given.get(id(result))
        if given is not None:
            return given[1]
        text = json.dumps(orchestration_response_data(result), cls=JSONEncoder)
        rendered = self._seen.get(text)
        if rendered is None:
            rendered = self._seen[text] = (_fingerprint(json.loads(text)),
                                           encoded(json.loads(text)))
        self._given[id(result)] = (result, rendered)
        return rendered


def push_message(subscription: Subscription, response: dict) -> dict:
    """The notification of `response` (a result's response data, JSON-decoded, as an
    EncodedJSON from `Rendering`): MQTT subscribers get it in the reference's envelope,
    encoded around the response's own encoding."""
    if subscription.notify_protocol.startswith("MQTT"):
        return encoded_object([("receiver", subscription.target),
                               ("sender", settings.SYSTEM_NAME), ("payload", response)])
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
    subscription.last_fingerprint, response = Rendering()(result)
    pushes_record([(subscription, response)], now=now)
    flags_clear([subscription.pk])  # its locked row: see flagging.py


def pushes_record(pushes: list[tuple[Subscription, dict]], *, now: dt.datetime,
                  send_here: bool = False) -> None:
    """Queue the notification of each (subscription, response data) in the caller's
    transaction (superseding the subscription's pending one), and record what was pushed:
    each subscription's `last_fingerprint` (set by the caller) and `now` (its flag is the
    caller's to clear: flagging.py). Those columns are in no index, so that the UPDATE can
    be HOT (docs/decisions.md, "Evaluation flags"). One UPDATE per distinct result (a
    change usually gives many subscribers the same one): Django's bulk_update builds a
    CASE per row in Python, which cost a quarter of a worker's time in the fan-out's
    profile (docs/performance.md). `send_here`: the notifications may be sent by this
    process right after the commit (outbox.py `deliveries_create`)."""
    deliveries_create([Notification(s.id, s.notify_protocol, s.notify_properties,
                                    push_message(s, response), s.expires_at, s.target)
                       for s, response in pushes], send_here=send_here)
    by_fingerprint: dict[str, list] = defaultdict(list)
    for subscription, _ in pushes:
        subscription.last_pushed_at = now
        by_fingerprint[subscription.last_fingerprint].append(subscription.pk)
    for printed, ids in by_fingerprint.items():
        Subscription.objects.filter(AnyOf("pk", ids)).update(
            last_fingerprint=printed, last_pushed_at=now)
