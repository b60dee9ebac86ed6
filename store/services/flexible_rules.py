"""Writing flexible store rules: bulk create and bulk remove (issue 33,
docs/flexible-store.md). Every writer (API, admin, import) goes through here."""
import datetime as dt
import hashlib
import json
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from conventions import names
from conventions.exceptions import InvalidParameter
from conventions.versions import version
from database.transaction_retry import retry_on_conflict
from store.metadata_requirements import validate_requirements
from store.models import MAX_PRIORITY, FlexibleRule
from store.services.nudge import processing_nudge
from store.services.rules import bulk_ensure_entries

# A rule without a priority is the least preferred, as in the Arrowhead 4.6 flexible store.
DEFAULT_PRIORITY = MAX_PRIORITY
_CHECK_CHUNK = 1000


@dataclass(frozen=True)
class FlexibleRuleDraft:
    """A flexible rule as submitted: raw, not yet normalized or validated (wire names in
    store.serializers.flexible_rules)."""

    consumer: str | None = None
    consumer_metadata: Any = None
    provider: str | None = None
    provider_metadata: Any = None
    service_definition: str | None = None
    interface_template: str | None = None
    service_metadata: Any = None
    min_version: str | None = None
    max_version: str | None = None
    priority: int | None = None


@dataclass(frozen=True)
class ValidFlexibleRule:
    consumer: str | None
    consumer_metadata: list[dict] | None
    provider: str | None
    provider_metadata: list[dict] | None
    service_definition: str
    interface_template: str | None
    service_metadata: list[dict] | None
    min_version: str | None
    max_version: str | None
    priority: int

    @property
    def fingerprint(self) -> str:
        canonical = json.dumps(asdict(self), sort_keys=True, separators=(",", ":"),
                               ensure_ascii=False)
        return hashlib.sha256(canonical.encode()).hexdigest()


def version_key(value: str) -> tuple[int, ...]:
    """A valid `major.minor.patch` as numbers, for comparing versions."""
    return tuple(int(piece) for piece in value.split("."))


def _requirements(value: Any, field: str) -> list[dict] | None:
    """None and [] mean no requirement (stored as None)."""
    validate_requirements(value, field)
    return value or None


def _name(value: str | None, convert) -> str | None:
    return None if value is None or not names.java_trim(value) else convert(value)


def _version(value: str | None) -> str | None:
    return None if value is None or not names.java_trim(value) else version(value)


def flexible_rule_validate(draft: FlexibleRuleDraft) -> ValidFlexibleRule:
    """Normalize and validate one draft: names as everywhere else, requirements in pull's
    operator language, versions as `major.minor.patch`."""
    if draft.service_definition is None or not names.java_trim(draft.service_definition):
        raise InvalidParameter("Service definition is missing")
    service_definition = names.service_definition(draft.service_definition)
    consumer = _name(draft.consumer, names.system_name)
    consumer_metadata = _requirements(draft.consumer_metadata, "consumerMetadataRequirements")
    if consumer is None and consumer_metadata is None:
        raise InvalidParameter("Consumer name or consumer metadata requirements are missing")
    provider = _name(draft.provider, names.system_name)
    provider_metadata = _requirements(draft.provider_metadata, "providerMetadataRequirements")
    if provider is None and provider_metadata is None:
        raise InvalidParameter("Provider name or provider metadata requirements are missing")
    interface_template = _name(draft.interface_template, names.interface_template)
    service_metadata = _requirements(draft.service_metadata, "serviceMetadataRequirements")
    min_version, max_version = _version(draft.min_version), _version(draft.max_version)
    if (min_version is not None and max_version is not None
            and version_key(min_version) > version_key(max_version)):
        raise InvalidParameter("Minimum version should not be greater than maximum version")
    priority = DEFAULT_PRIORITY if draft.priority is None else draft.priority
    if priority < 1:
        raise InvalidParameter("Priority should be positive")
    if priority > MAX_PRIORITY:
        raise InvalidParameter(f"Priority should not be greater than {MAX_PRIORITY}")
    return ValidFlexibleRule(consumer, consumer_metadata, provider, provider_metadata,
                             service_definition, interface_template, service_metadata,
                             min_version, max_version, priority)


def _describe(rule: ValidFlexibleRule) -> str:
    consumer = rule.consumer or "consumers by metadata"
    provider = rule.provider or "providers by metadata"
    return (f"consumer: {consumer}, provider: {provider}, service definition: "
            f"{rule.service_definition}, priority: {rule.priority}")


def _ensure_distinct(rules: Sequence[ValidFlexibleRule]) -> None:
    seen: set[str] = set()
    for rule in rules:
        if rule.fingerprint in seen:
            raise InvalidParameter(f"Duplicate rule in the request: {_describe(rule)}")
        seen.add(rule.fingerprint)


def flexible_rules_ensure_not_stored(rules: Sequence[ValidFlexibleRule]) -> None:
    """Refuse the first rule (in request order) that is stored already."""
    stored: set[str] = set()
    for start in range(0, len(rules), _CHECK_CHUNK):
        chunk = {rule.fingerprint for rule in rules[start:start + _CHECK_CHUNK]}
        stored.update(FlexibleRule.objects.filter(fingerprint__in=chunk)
                      .values_list("fingerprint", flat=True))
    for rule in rules:
        if rule.fingerprint in stored:
            raise InvalidParameter(f"The same rule exists already: {_describe(rule)}")


def _row(rule: ValidFlexibleRule, requester: str, now) -> FlexibleRule:
    return FlexibleRule(
        consumer=rule.consumer, consumer_metadata=rule.consumer_metadata, provider=rule.provider,
        provider_metadata=rule.provider_metadata, service_definition=rule.service_definition,
        interface_template=rule.interface_template, service_metadata=rule.service_metadata,
        min_version=rule.min_version, max_version=rule.max_version, priority=rule.priority,
        fingerprint=rule.fingerprint, created_by=requester, created_at=now)


@retry_on_conflict
def flexible_rules_store(rules: Sequence[ValidFlexibleRule], *, requester: str,
                         batch_size: int = 1000) -> list[FlexibleRule]:
    """Insert validated rules in one transaction, all or nothing; a rule a concurrent request
    stored first is refused like one stored before (the unique fingerprint is the net)."""
    # A microsecond apart, so that rules made together keep the request's order where
    # priority and service definition tie (pull's order: docs/flexible-store.md).
    now = timezone.now()
    created = [_row(rule, requester, now + dt.timedelta(microseconds=index))
               for index, rule in enumerate(rules)]
    try:
        with transaction.atomic():
            flexible_rules_ensure_not_stored(rules)
            processing_nudge()
            for start in range(0, len(created), batch_size):
                FlexibleRule.objects.bulk_create(created[start:start + batch_size])
    except IntegrityError:
        flexible_rules_ensure_not_stored(rules)
        raise InvalidParameter("A conflicting rule was created concurrently; please retry")
    return created


def flexible_rule_create_many(*, drafts: Sequence[FlexibleRuleDraft | None], requester: str,
                              limit: int | None) -> list[FlexibleRule]:
    """Validate a create request (every draft, then duplicates inside it) and store it."""
    bulk_ensure_entries(drafts, limit)
    rules = [flexible_rule_validate(draft) for draft in drafts]
    _ensure_distinct(rules)
    return flexible_rules_store(rules, requester=requester)


@retry_on_conflict
@transaction.atomic
def flexible_rule_delete_many(*, ids: Sequence[uuid.UUID]) -> int:
    """Remove the rules with these ids; unknown ids are ignored."""
    processing_nudge()
    deleted, _ = FlexibleRule.objects.filter(id__in=list(ids)).delete()
    return deleted
