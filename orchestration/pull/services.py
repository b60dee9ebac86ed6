"""Pull (SPEC §5): the consumer's rules, filtered and enriched with the catalog, ordered,
reserved, with tokens; recorded as an orchestration job. The steps in the order the code runs
them (SPEC §5's numbers; docs/orchestration.md, "How results are computed"): warnings for
unsupported flags (10); per rule (1), other consumers' reservations (7), versions (3), the
catalog join (2), alive time and metadata (3), interfaces (4); blacklisted providers (before
anything is reserved or issued for them); preferred providers (5); QoS (6); exclusivity and
matchmaking (7, 8); tokens (9); last, the Java warnings (2, 10).
"""
import datetime as dt
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings
from django.utils import timezone

from api.operations import FLEXIBLE_STORE
from clients.errors import PeerRefused
from conventions.exceptions import ArrowheadError, ExternalServerError, InvalidParameter
from conventions.exclusivity import MAX_EXCLUSIVITY_SECONDS, exclusivity_seconds
from identity.blacklist import providers_allowed
from orchestration.history.job_writer import PullJob, job_write_behind
from orchestration.models import OrchestrationJob
from orchestration.pull import ca_policies, matching, reservations, selectors
from orchestration.pull.flexible import flexible_selection
from orchestration.pull.latency import instance_latencies
from orchestration.pull.records import CatalogInstance, PullRule, Reservation
from orchestration.pull.types import (
    OrchestrationRequest,
    OrchestrationResult,
    OrchestrationResultEntry,
)
from orchestration.tokens import ca_tokens
from orchestration.tokens.services import TokenGrant, is_issuable, tokens_issue
from store.metadata_requirements import matches_any, regex_budget

logger = logging.getLogger(__name__)

WARN_PART_TIME = "part_time_exclusivity"
WARN_NOT_EXCLUSIVE = "not_exclusive"
WARN_AUTO_MATCHMAKING = "auto_matchmaking"
WARN_NO_TRANSLATION = "translation_not_supported"
WARN_NO_INTERCLOUD = "intercloud_not_supported"
# The Java simple store's warnings (OrchestrationValidation.ignoredFieldsToString): `<key>: [a, b]`
WARN_IGNORED_FIELDS = "ignoredFields"
WARN_IGNORED_FLAGS = "ignoredFlags"
QOS_MAX_LATENCY = "maxLatencyMs"
QOS_FIELD = "qosRequirements"
# More than 18 digits is no latency, and int() refuses more than 4300 (a 500).
MAX_LATENCY_DIGITS = 18


@dataclass
class Candidate:
    rule: PullRule
    provider: str
    version: str
    instance: CatalogInstance | None
    interfaces: list[dict] | None = None
    exclusive_until: dt.datetime | None = None
    held_by_consumer: bool = False

    @property
    def service_definition(self) -> str:
        return self.rule.service_definition

    @property
    def reservable_seconds(self) -> int:
        seconds = exclusivity_seconds(self.instance.metadata) if self.instance else None
        return min(seconds, MAX_EXCLUSIVITY_SECONDS) if seconds and seconds > 0 else 0


@dataclass
class _OrchestrationRun:
    """One orchestration for one consumer: its inputs and the warnings collected so far."""

    consumer: str
    request: OrchestrationRequest
    now: dt.datetime
    commit: bool = True  # False: a preview, nothing reserved, no token issued
    # The simple store's rules and their instances' reservations, when already read
    # (`PreviewSharing`); None: `_selection` reads them.
    rules: list[PullRule] | None = None
    locks: dict[str, Reservation] | None = None
    warnings: list[str] = field(default_factory=list)

    def warn(self, warning: str) -> None:
        if warning not in self.warnings:
            self.warnings.append(warning)


def qos_max_latency(request: OrchestrationRequest) -> int | None:
    """The QoS requirement, checked against the configuration (SPEC §5 step 6)."""
    qos = request.qos_requirements
    if not qos:
        return None
    if not settings.QOS_ENABLED:
        raise InvalidParameter("Quality of service requirements are present, but QoS support "
                               "is disabled")
    for key in qos:
        if key != QOS_MAX_LATENCY:
            raise InvalidParameter(f"Unsupported QoS requirement: {key}")
    value = qos.get(QOS_MAX_LATENCY)
    valid_type = isinstance(value, (str, int)) and not isinstance(value, bool)
    text = str(value).strip() if valid_type else ""
    if (not text.isascii() or not text.isdigit() or len(text) > MAX_LATENCY_DIGITS
            or int(text) < 1):
        raise InvalidParameter("Invalid QoS requirement: maxLatencyMs should be a positive "
                               "integer")
    return int(text)


def _selection(run: _OrchestrationRun,
               ) -> tuple[list[tuple[PullRule, CatalogInstance | None]], dict[str, Reservation]]:
    """Steps 1 and 2 for the strategy in force: the consumer's rules with the instances behind
    them, and those instances' reservations, read from the source `selectors.pull_source`
    chooses (the process's snapshot, or the database). The simple store's rules name their
    instances, looked up by id (an id nobody knows gives None); the flexible store's rules
    select instances of the ServiceRegistry and the catalog (orchestration.pull.flexible)."""
    definition = run.request.requirement.service_definition
    source = selectors.pull_source()
    if settings.ORCHESTRATION_STRATEGY == FLEXIBLE_STORE:
        selected = flexible_selection(consumer=run.consumer, service_definition=definition,
                                      source=source)
        ids = {rule.service_instance_id for rule, _ in selected}
        return selected, source.active_locks(ids, now=run.now)
    rules = run.rules
    if rules is None:
        rules = source.consumer_rules(consumer=run.consumer, service_definition=definition)
    ids = {rule.service_instance_id for rule in rules}
    catalog = selectors.catalog_instances(ids, local=source.local_instances)
    locks = run.locks if run.locks is not None else source.active_locks(ids, now=run.now)
    return [(rule, catalog.get(rule.service_instance_id)) for rule in rules], locks


def _candidates(run: _OrchestrationRun) -> list[Candidate]:
    """Steps 1–4 and the reservations of other consumers."""
    selected, locks = _selection(run)
    candidates = []
    for rule, instance in selected:
        provider, _, version = rule.service_instance_id.split("|")
        candidate = Candidate(rule, provider, version, instance)
        lock = locks.get(rule.service_instance_id)
        if lock is not None:
            if lock.owner != run.consumer:
                continue
            candidate.exclusive_until, candidate.held_by_consumer = lock.expires_at, True
        if _qualifies(candidate, run):
            candidates.append(candidate)
    return candidates


def _qualifies(candidate: Candidate, run: _OrchestrationRun) -> bool:
    requirement, instance = run.request.requirement, candidate.instance
    if requirement.versions and candidate.version not in requirement.versions:
        return False
    if instance is None:
        return True  # kept as the Java simple store keeps it; see _java_warnings
    expires_at = instance.expires_at
    if expires_at is not None and (expires_at <= run.now or (
            requirement.alives_at is not None and expires_at < requirement.alives_at)):
        return False
    if not matches_any(instance.metadata, list(requirement.metadata_requirements)):
        return False
    candidate.interfaces = matching.qualifying_interfaces(instance.interfaces, requirement)
    return bool(candidate.interfaces)


def _not_blacklisted(candidates: list[Candidate]) -> list[Candidate]:
    """Without the providers the Blacklist lists (reference-dynamic §9.5, identity.blacklist);
    where the reference has it: before preferred providers, so that a blacklisted preferred
    provider does not push the others out."""
    if not settings.BLACKLIST_FILTER or not candidates:
        return candidates
    allowed = providers_allowed(candidate.provider for candidate in candidates)
    return [candidate for candidate in candidates if candidate.provider in allowed]


def _authorized(candidates: list[Candidate], run: _OrchestrationRun) -> list[Candidate]:
    """The flexible store: without the candidates whose provider has not granted the consumer
    their service in ConsumerAuthorization (orchestration.pull.ca_policies)."""
    pairs = [(candidate.provider, candidate.service_definition) for candidate in candidates]
    refused = ca_policies.denied(run.consumer, pairs, run.request.requirement.operations)
    return [candidate for candidate, pair in zip(candidates, pairs, strict=True)
            if pair not in refused]


def _within_latency(candidates: list[Candidate], max_latency: int, now) -> list[Candidate]:
    """Known instances measured within the latency; unknown ones cannot be measured and are
    kept (named in `ignoredFields`). ServiceRegistry instances (pk None) are never measured:
    like an unmeasured catalog instance, they do not qualify."""
    latencies = instance_latencies([c.instance.pk for c in candidates
                                    if c.instance and c.instance.pk is not None], now=now)
    return [c for c in candidates
            if c.instance is None or latencies.get(c.instance.pk, max_latency + 1) <= max_latency]


def _java_warning(key: str, names) -> str:
    return f"{key}: [{', '.join(names)}]"


def _java_warnings(candidates: list[Candidate], run: _OrchestrationRun, qos: bool) -> list[str]:
    """The Java simple store's warnings: `ignoredFields` names the conditions that could not
    be evaluated for the unknown instances among the results (none: no warning), and
    `ignoredFlags` the flags that were ignored (SPEC §5 steps 2 and 10)."""
    warnings = []
    fields = run.request.requirement.catalog_fields + ((QOS_FIELD,) if qos else ())
    if fields and any(candidate.instance is None for candidate in candidates):
        warnings.append(_java_warning(WARN_IGNORED_FIELDS, fields))
    if run.request.ignored_flags:
        warnings.append(_java_warning(WARN_IGNORED_FLAGS, run.request.ignored_flags))
    return warnings


def _flags_check_as_dynamic(request: OrchestrationRequest) -> None:
    """The flexible store answers the flags it does not support as the Java
    DynamicServiceOrchestration does with neither other clouds nor translation enabled: the
    requests it refuses are refused with its messages, the others served locally without a
    warning (it names none)."""
    requirement = request.requirement
    one_operation = len(requirement.operations) == 1
    if request.has("ONLY_INTERCLOUD"):
        raise InvalidParameter("ONLY_INTERCLOUD flag is present, but intercloud orchestration "
                               "is not enabled")
    if request.has("ALLOW_INTERCLOUD") and not one_operation:
        raise InvalidParameter("Exactly one operation must be defined when only inter-cloud "
                               "orchestration is allowed")
    if request.has("ALLOW_TRANSLATION") and not one_operation:
        raise InvalidParameter("Exactly one operation must be defined when translation is "
                               "allowed")
    if request.has("ALLOW_TRANSLATION") and not requirement.interface_template_names:
        raise InvalidParameter("Interface template name(s) must be defined when translation "
                               "is allowed")
    if request.has("ONLY_PREFERRED") and not requirement.preferred_providers:
        raise InvalidParameter("ONLY_PREFERRED flag is present, but no preferred provider is "
                               "defined")


def _reserve(candidate: Candidate, run: _OrchestrationRun) -> bool:
    """Reserve for the consumer (or find its own live reservation). False when another
    consumer won the instance in the meantime."""
    if candidate.held_by_consumer:
        return True
    requested = run.request.exclusivity_duration
    seconds = min(requested, candidate.reservable_seconds)
    if not run.commit:
        candidate.exclusive_until = run.now + dt.timedelta(seconds=seconds)
        return True
    until = reservations.reserve(instance_id=candidate.rule.service_instance_id,
                                 owner=run.consumer, seconds=seconds, now=run.now)
    candidate.exclusive_until = until
    return until is not None


def _choose(group: list[Candidate], run: _OrchestrationRun) -> Candidate | None:
    """Matchmaking for one service definition: the first candidate; with exclusivity, the
    first one that could be reserved. An instance another consumer reserved in the meantime
    is not offered at all."""
    requested = run.request.exclusivity_duration
    if requested is None:
        return group[0]
    lost: set[int] = set()
    for candidate in group:
        if not (candidate.held_by_consumer or candidate.reservable_seconds):
            continue
        if _reserve(candidate, run):
            if candidate.reservable_seconds < requested and not candidate.held_by_consumer:
                run.warn(WARN_PART_TIME)
            return candidate
        lost.add(id(candidate))
    run.warn(WARN_NOT_EXCLUSIVE)
    if run.request.has("ONLY_EXCLUSIVE"):
        return None
    return next((c for c in group if id(c) not in lost), None)


def _exclusivity_and_matchmaking(candidates: list[Candidate],
                                 run: _OrchestrationRun) -> list[Candidate]:
    request = run.request
    # ONLY_EXCLUSIVE (which comes with a duration) is applied per service definition by
    # _choose: one with nothing reservable gives no result and `not_exclusive`.
    matchmaking = request.has("MATCHMAKING")
    if request.exclusivity_duration is not None and not matchmaking:
        matchmaking = True
        run.warn(WARN_AUTO_MATCHMAKING)
    if not matchmaking:
        return candidates
    if request.exclusivity_duration is not None and not candidates:
        run.warn(WARN_NOT_EXCLUSIVE)
    chosen = (_choose(group, run) for group in
              matching.group_by(candidates, lambda c: c.service_definition))
    return [candidate for candidate in chosen if candidate is not None]


def _grants(candidates: list[Candidate], run: _OrchestrationRun, issuable: Callable[[str], bool],
            whole_service: Callable[[Candidate], str]) -> list[tuple[Candidate, TokenGrant]]:
    """One grant per candidate, token variant among its interfaces' policies and scope (each
    requested operation, else `whole_service`)."""
    scopes = run.request.requirement.operations
    grants = []
    for candidate in candidates:
        variants = dict.fromkeys(i["policy"] for i in candidate.interfaces or ()
                                 if issuable(i["policy"]))
        for variant in variants:
            for scope in scopes or (whole_service(candidate),):
                grants.append((candidate, TokenGrant(variant, run.consumer, candidate.provider,
                                                     candidate.service_definition, scope)))
    return grants


def _tokens(candidates: list[Candidate], run: _OrchestrationRun) -> dict[int, dict]:
    """Authorization tokens by candidate (id()), `{policy: {operation: token}}`, from the
    issuer AUTHORIZATION_TOKENS names."""
    if not run.commit:
        return {}
    if settings.AUTHORIZATION_TOKENS == "consumer-authorization":
        return _generated_tokens(candidates, run)
    return _own_tokens(candidates, run)


def _own_tokens(candidates: list[Candidate], run: _OrchestrationRun) -> dict[int, dict]:
    grants = _grants(candidates, run, is_issuable, lambda c: c.service_definition)
    issued = tokens_issue([grant for _, grant in grants], now=run.now)
    tokens: dict[int, dict] = {}
    for (candidate, _), token in zip(grants, issued, strict=True):
        entry = {"tokenType": token.token_type, "targetType": "SERVICE_DEF",
                 "token": token.token, "expiresAt": token.expires_at}
        if token.usage_limit is not None:
            entry["usageLimit"] = token.usage_limit
        tokens.setdefault(id(candidate), {}).setdefault(token.grant.variant, {})[
            token.grant.scope] = entry
    return tokens


def _generated_tokens(candidates: list[Candidate], run: _OrchestrationRun) -> dict[int, dict]:
    """ConsumerAuthorization's tokens, mapped back as DynamicServiceOrchestration does: each
    to the first candidate of its provider, under its variant and its scope (the service
    definition when the scope is empty)."""
    grants = _grants(candidates, run, ca_tokens.is_requestable, lambda c: ca_tokens.WHOLE_SERVICE)
    generated = ca_tokens.tokens_generate([grant for _, grant in grants])
    first: dict[str, Candidate] = {}
    for candidate in candidates:
        first.setdefault(candidate.provider, candidate)
    tokens: dict[int, dict] = {}
    for token in generated:
        candidate = first.get(token.provider)
        if candidate is not None:
            tokens.setdefault(id(candidate), {}).setdefault(token.variant, {})[token.key] = \
                token.entry
    return tokens


def _entry(candidate: Candidate, tokens: dict | None) -> OrchestrationResultEntry:
    instance = candidate.instance
    return OrchestrationResultEntry(
        service_instance_id=candidate.rule.service_instance_id,
        provider=candidate.provider,
        service_definition=candidate.service_definition,
        version=candidate.version,
        alive_until=instance.expires_at if instance else None,
        exclusive_until=candidate.exclusive_until,
        metadata=instance.metadata if instance else None,
        interfaces=candidate.interfaces,
        authorization_tokens=tokens,
    )


def orchestrate_preview(*, consumer: str, request: OrchestrationRequest, now: dt.datetime,
                        sharing: "PreviewSharing | None" = None) -> OrchestrationResult:
    """What the orchestration would answer, writing nothing: no reservation, no token, no
    job (subscriptions use it to tell whether a result changed; `commit_differs` says
    whether the committed run could answer otherwise). With `sharing`, the preview of
    another consumer that cannot differ from this one's is returned instead (the same
    object; nobody changes a result)."""
    run = _OrchestrationRun(consumer, request, now, commit=False)
    if sharing is None or settings.ORCHESTRATION_STRATEGY == FLEXIBLE_STORE:
        return _orchestrate(run)
    return sharing.preview(run)


class PreviewSharing:
    """The previews of one batch of consumers (a change's evaluation of its subscriptions)
    shared between those whose previews cannot differ. Under the simple store a consumer
    enters a preview in two ways only: through its rules, and through the reservations of
    their instances (its own are offered, another's are not). Consumers with equal rules,
    none of whose instances is reserved, asking the same request (the same parsed object)
    at the same instant get one preview: the rest of it (the catalog, the Blacklist, the
    ServiceRegistry, QoS) depends on the instances, the request and the instant. A fan-out's
    subscribers mostly share their rules, and the previews were a third of its evaluation
    (docs/performance.md). The flexible store's consumers enter through their metadata and
    ConsumerAuthorization too: `orchestrate_preview` never shares those."""

    def __init__(self) -> None:
        # (request id, instant, rules) -> (the request, kept so that its id stays its own;
        # the preview)
        self._previews: dict[tuple, tuple[OrchestrationRequest, OrchestrationResult]] = {}

    def preview(self, run: _OrchestrationRun) -> OrchestrationResult:
        source = selectors.pull_source()
        run.rules = source.consumer_rules(
            consumer=run.consumer, service_definition=run.request.requirement.service_definition)
        run.locks = source.active_locks({rule.service_instance_id for rule in run.rules},
                                        now=run.now)
        if run.locks:
            return _orchestrate(run)
        key = (id(run.request), run.now, tuple(run.rules))
        shared = self._previews.get(key)
        if shared is None:
            shared = self._previews[key] = (run.request, _orchestrate(run))
        return shared[1]


def orchestrate_unrecorded(*, consumer: str, request: OrchestrationRequest,
                           now: dt.datetime) -> OrchestrationResult:
    """The orchestration for real (reserves instances, issues tokens) but without recording a
    job: `orchestrate_recorded` and `orchestration_pull` add that."""
    return _orchestrate(_OrchestrationRun(consumer, request, now))


def _orchestrate(run: _OrchestrationRun) -> OrchestrationResult:
    request, now, commit = run.request, run.now, run.commit
    max_latency = qos_max_latency(request)
    flexible = settings.ORCHESTRATION_STRATEGY == FLEXIBLE_STORE
    if flexible:
        _flags_check_as_dynamic(request)
    else:
        if request.has("ALLOW_TRANSLATION"):
            run.warn(WARN_NO_TRANSLATION)
        if request.has("ALLOW_INTERCLOUD"):
            run.warn(WARN_NO_INTERCLOUD)
    requirement = request.requirement
    with regex_budget():  # requirements are evaluated per candidate (docs/limits.md)
        qualifying = _candidates(run)
    qualifying = _not_blacklisted(qualifying)
    if flexible and settings.CONSUMER_AUTHORIZATION_FILTER:
        qualifying = _authorized(qualifying, run)
    candidates = matching.preferred_first(
        qualifying, lambda c: c.provider, requirement.preferred_providers,
        only_preferred=request.has("ONLY_PREFERRED"))
    if max_latency is not None:
        candidates = _within_latency(candidates, max_latency, now)
    candidates = _exclusivity_and_matchmaking(candidates, run)
    tokens = _tokens(candidates, run)
    warnings = ([] if flexible else _java_warnings(candidates, run, qos=max_latency is not None)
                ) + run.warnings
    return OrchestrationResult([_entry(c, tokens.get(id(c))) for c in candidates], warnings,
                               commit_differs=not commit and _commit_differs(candidates, run))


def _commit_differs(candidates: list[Candidate], run: _OrchestrationRun) -> bool:
    """Whether committing this preview would change it: a reservation or a token."""
    if run.request.exclusivity_duration is not None:
        return True
    issuable = (ca_tokens.is_requestable if settings.AUTHORIZATION_TOKENS ==
                "consumer-authorization" else is_issuable)
    return any(issuable(interface["policy"]) for candidate in candidates
               for interface in candidate.interfaces or ())


def orchestration_pull(*, requester: str, request: OrchestrationRequest) -> OrchestrationResult:
    """Pull for the requester, for real, recorded as one PULL job (written behind the
    answer)."""
    job = PullJob(requester, request.requirement.service_definition, timezone.now())
    return orchestrate_recorded(job, request)


def orchestrate_recorded(job: OrchestrationJob | PullJob, request: OrchestrationRequest,
                         ) -> OrchestrationResult:
    """Orchestrate for `job.target` for real and record the job once it has ended: DONE with the
    result count, or ERROR for a failure of ours or of another system (the ServiceRegistry: 503;
    a refusal of the Blacklist, passed through); a refused request is not recorded.
    `job` is a pull's (written behind the answer), new (inserted) or a queued job's row,
    IN_PROGRESS since `job.started_at` (updated)."""
    try:
        result = orchestrate_unrecorded(consumer=job.target, request=request,
                                        now=job.started_at)
    except (ExternalServerError, PeerRefused) as exc:
        _record(job, OrchestrationJob.Status.ERROR, 0, exc.message)
        raise
    except ArrowheadError:
        raise
    except Exception as exc:
        _record(job, OrchestrationJob.Status.ERROR, 0, f"{type(exc).__name__}: {exc}")
        raise
    _record(job, OrchestrationJob.Status.DONE, len(result.results),
            f"{len(result.results)} local result(s)")
    return result


def _record(job: OrchestrationJob | PullJob, status: str, count: int, message: str) -> None:
    """Write the ended job: a pull's once answered (orchestration.history.job_writer), a new row (an
    automatic push), or the update of a queued job's row (push management's trigger), which
    only an IN_PROGRESS job takes: one the stale job sweep gave up on meanwhile keeps its
    ERROR."""
    job.status, job.result_count, job.message = status, count, message
    job.finished_at = timezone.now()
    if isinstance(job, PullJob):
        job_write_behind(job)
        return
    if job._state.adding:
        job.save(force_insert=True)
        return
    OrchestrationJob.objects.filter(pk=job.pk, status=OrchestrationJob.Status.IN_PROGRESS).update(
        status=status, result_count=count, message=message, finished_at=job.finished_at)
