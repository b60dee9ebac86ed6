"""Writing orchestration rules: create, modify priorities, remove (SPEC §3,
reference-simple §6.5–6.7). Every writer (API, admin) goes through here; imports through
store.services.imports, which takes the same rule set locks."""
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from conventions import names
from conventions.exceptions import InvalidParameter
from conventions.instance_ids import ServiceInstanceId, parse_instance_id
from conventions.uuids import require_uuid
from database.bulk_insert import new_ids, rows_insert
from database.transaction_retry import retry_on_conflict
from store.services.nudge import processing_nudge
from store.models import MAX_PRIORITY, UNIQUE_PRIORITY, Rule
from store.services.locks import rule_sets_lock

_CHECK_CHUNK = 1000  # rules a lookup query looks at


@dataclass(frozen=True)
class RuleDraft:
    """A rule as submitted: raw, not yet normalized or validated."""

    consumer: str | None
    service_instance_id: str | None
    priority: int | None


@dataclass(frozen=True)
class ValidRule:
    consumer: str
    instance: ServiceInstanceId
    priority: int

    @property
    def key(self) -> tuple[str, str, int]:
        return self.consumer, self.instance.service_definition, self.priority


def rule_conflict_message(consumer: str, service_definition: str, priority: int) -> str:
    return ("Conflicting rules, the combination of the following fields should be unique: "
            f"{consumer}, service definition: {service_definition}, priority: {priority}")


def _stored_message(consumer: str, service_definition: str, priority: int) -> str:
    return (f"There is already an existing entity with consumer name: {consumer}, "
            f"service definition: {service_definition}, priority: {priority}")


def rule_validate(draft: RuleDraft) -> ValidRule:
    """Normalize and validate one draft, in the reference's order."""
    if draft.priority is None:
        raise InvalidParameter("Priority is missing")
    if draft.priority < 1:
        raise InvalidParameter("Priority should be positive")
    if draft.priority > MAX_PRIORITY:
        raise InvalidParameter(f"Priority should not be greater than {MAX_PRIORITY}")
    consumer = names.system_name(draft.consumer)
    return ValidRule(consumer, parse_instance_id(draft.service_instance_id), draft.priority)


def rules_ensure_distinct(rules: Sequence[ValidRule]) -> None:
    seen: set[tuple[str, str, int]] = set()
    for rule in rules:
        if rule.key in seen:
            raise InvalidParameter(rule_conflict_message(*rule.key))
        seen.add(rule.key)


def rules_stored(rules: Sequence[ValidRule]) -> dict[tuple[str, str, int], tuple[uuid.UUID, str]]:
    """The stored rules with the key of one of `rules`: (id, instance id) by key. The queries
    (one a chunk of rules) read a superset, so that IN lists stay short on big imports."""
    columns = ("consumer", "service_definition", "priority", "id", "service_instance_id")
    chunks = (rules[start:start + _CHECK_CHUNK] for start in range(0, len(rules), _CHECK_CHUNK))
    return {(c, s, p): (rule_id, instance_id) for chunk in chunks
            for c, s, p, rule_id, instance_id in Rule.objects.filter(
                consumer__in={r.consumer for r in chunk},
                service_definition__in={r.instance.service_definition for r in chunk},
                priority__in={r.priority for r in chunk}).values_list(*columns)}


def rules_ensure_not_stored(rules: Sequence[ValidRule]) -> None:
    """Refuse the first rule (in request order) whose key a stored rule already has."""
    stored = rules_stored(rules)
    for rule in rules:
        if rule.key in stored:
            raise InvalidParameter(_stored_message(*rule.key))


def rule_row(rule: ValidRule, requester: str, now) -> Rule:
    """The new row of a validated rule."""
    return Rule(consumer=rule.consumer, service_definition=rule.instance.service_definition,
                service_instance_id=str(rule.instance), priority=rule.priority,
                created_by=requester, updated_by=requester, created_at=now, updated_at=now)


_COLUMNS = ("id", "consumer", "service_definition", "service_instance_id", "priority",
            "created_by", "updated_by", "created_at", "updated_at")


def rules_insert(rules: Sequence[ValidRule], requester: str, now) -> None:
    """Insert the rows of validated rules in one statement (COPY on PostgreSQL), for a writer
    that holds their rule sets' locks and needs no model instances back (an import: each
    rule made into a model instance and quoted by `bulk_create` was most of its CPU)."""
    rows_insert(Rule, _COLUMNS, [
        (rule_id, rule.consumer, rule.instance.service_definition, str(rule.instance),
         rule.priority, requester, requester, now, now)
        for rule_id, rule in zip(new_ids(len(rules)), rules, strict=True)])


@retry_on_conflict
def rules_store(rules: Sequence[ValidRule], *, requester: str,
                batch_size: int = 1000) -> list[Rule]:
    """Insert validated rules in one transaction, all or nothing. A rule that a concurrent
    request stored first is refused with the same 400 as one stored before: the rule set
    locks make the later request wait and then see it (the unique constraint is the net)."""
    now = timezone.now()
    created = [rule_row(rule, requester, now) for rule in rules]
    try:
        with transaction.atomic():
            rule_sets_lock((rule.consumer, rule.instance.service_definition) for rule in rules)
            rules_ensure_not_stored(rules)
            processing_nudge()
            for start in range(0, len(created), batch_size):
                Rule.objects.bulk_create(created[start:start + batch_size])
    except IntegrityError:
        rules_ensure_not_stored(rules)  # the concurrent winner is committed now
        raise InvalidParameter("A conflicting rule was created concurrently; please retry")
    return created


def bulk_ensure_entries(drafts: Sequence[object | None], limit: int | None) -> None:
    """A bulk create's entries: some, at most `limit`, none of them null."""
    if not drafts:
        raise InvalidParameter("Request payload is empty")
    if limit is not None and len(drafts) > limit:
        raise InvalidParameter(f"Too many entries: at most {limit} may be created in one request")
    if any(draft is None for draft in drafts):
        raise InvalidParameter("Request payload contains null element")


def rule_create_many(*, drafts: Sequence[RuleDraft | None], requester: str,
                     limit: int | None) -> list[Rule]:
    """Validate a create request (every draft, then uniqueness inside it) and store it."""
    bulk_ensure_entries(drafts, limit)
    rules = [rule_validate(draft) for draft in drafts]
    rules_ensure_distinct(rules)
    return rules_store(rules, requester=requester)


def _parse_priority_map(priorities: dict[str, int | None]) -> dict[uuid.UUID, int]:
    changes = {}
    for key, value in priorities.items():
        rule_id = require_uuid(key)
        if rule_id in changes:
            raise InvalidParameter(f"Duplicate UUID: {rule_id}")
        changes[rule_id] = value
    if any(value is None for value in changes.values()):
        raise InvalidParameter("Priority map contains null value")
    for value in changes.values():
        if value < 1 or value > MAX_PRIORITY:
            raise InvalidParameter(f"Invalid priority: {value}, should be positive"
                                   if value < 1 else
                                   f"Invalid priority: {value}, should not be greater than "
                                   f"{MAX_PRIORITY}")
    return changes


def _ensure_unique_after(changes: dict[uuid.UUID, int], rules: Iterable[Rule]) -> None:
    """Every rule set touched must have distinct priorities once the changes are applied."""
    taken: set[tuple[str, str, int]] = set()
    for rule in rules:
        key = (rule.consumer, rule.service_definition, changes.get(rule.id, rule.priority))
        if key in taken:
            raise InvalidParameter(rule_conflict_message(*key))
        taken.add(key)


@retry_on_conflict
def rule_priorities_modify(*, priorities: dict[str, int | None], requester: str) -> list[Rule]:
    """Apply new priorities atomically: swaps and rotations inside a rule set work, and
    several rule sets may change in one call."""
    changes = _parse_priority_map(priorities)
    if not changes:
        return []
    try:
        with transaction.atomic():
            siblings = _lock_rule_sets_of(changes)
            found = {rule.id: rule for rule in siblings if rule.id in changes}
            for rule_id in changes:
                if rule_id not in found:
                    raise InvalidParameter(f"Not existing UUID: {rule_id}")
            _ensure_unique_after(changes, siblings)
            now = timezone.now()
            modified = []
            for rule_id, priority in changes.items():
                rule = found[rule_id]
                rule.priority, rule.updated_by, rule.updated_at = priority, requester, now
                modified.append(rule)
            _store_priorities(modified)
            processing_nudge()
    except IntegrityError:
        raise InvalidParameter("A conflicting rule was created concurrently; please retry")
    return modified


def _store_priorities(rules: list[Rule]) -> None:
    """Write new priorities of rules whose final state was checked. The unique constraint is
    checked row by row, so a swap needs it deferred to the end of the update (PostgreSQL);
    SQLite, which cannot defer it, gets a delete and re-insert with the same ids instead
    (it has a single writer, so nothing can slip in between)."""
    if not connection.features.supports_deferrable_unique_constraints:
        Rule.objects.filter(id__in=[rule.id for rule in rules]).delete()
        Rule.objects.bulk_create(rules)
        return
    with connection.cursor() as cursor:
        cursor.execute(f"SET CONSTRAINTS {UNIQUE_PRIORITY} DEFERRED")
        Rule.objects.bulk_update(rules, ["priority", "updated_by", "updated_at"])
        cursor.execute(f"SET CONSTRAINTS {UNIQUE_PRIORITY} IMMEDIATE")  # check now


def _rule_sets_of(rules) -> list[tuple[str, str]]:
    """The (consumer, service definition) pairs of a rule queryset. They never change for a
    rule (only its priority does), so reading them before locking is safe."""
    return list(rules.values_list("consumer", "service_definition").distinct())


def _lock_rule_sets_of(rule_ids: Iterable[uuid.UUID]) -> list[Rule]:
    """Lock the rule sets (consumer, service definition) the ids belong to, then every rule
    of them in id order, so that concurrent writers wait for each other instead of
    deadlocking."""
    rule_sets = _rule_sets_of(Rule.objects.filter(id__in=rule_ids))
    rule_sets_lock(rule_sets)
    matching = Q(pk__in=[])
    for consumer, definition in rule_sets:
        matching |= Q(consumer=consumer, service_definition=definition)
    return list(Rule.objects.select_for_update().filter(matching).order_by("id"))


def _delete_locked(rules) -> int:
    """Delete a rule queryset after locking its rule sets (which keeps every other rule
    writer off its rows)."""
    rule_sets = _rule_sets_of(rules)
    rule_sets_lock(rule_sets)
    processing_nudge()
    deleted, _ = rules.delete()
    return deleted


@retry_on_conflict
@transaction.atomic
def rule_delete_many(*, ids: Sequence[uuid.UUID]) -> int:
    return _delete_locked(Rule.objects.filter(id__in=list(ids)))
