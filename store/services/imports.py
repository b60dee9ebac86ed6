"""Importing rule and instance files (store.files reads them): the plan of what an import
changes, and applying it; an entry is matched with the stored one of the same key
(docs/decisions.md, "Import and export (issue 18)"; docs/rule-store.md)."""
import hashlib
import json
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from conventions.exceptions import InvalidParameter
from database.bulk_write import BULK_WRITE_CONSUMERS, bulk_write_declare
from database.transaction_retry import retry_on_conflict
from store.services.nudge import processing_nudge
from store.models import Rule, ServiceInstance
from store.services.instances import (
    ValidInstance,
    instance_delete_many,
    instances_store,
)
from store.services.locks import instances_lock, rule_sets_lock
from store.services.rules import rules_insert, rules_stored

Progress = Callable[[int, int], None]  # (written so far, to write)
_CHUNK = 1000  # keys per lookup query, rows per insert
SHOWN = 10  # entries a refusal names


@dataclass(frozen=True)
class ImportPlan:
    """What an import changes, each entry as a line an operator reads; `differing`: the
    position in the imported entries of each `updated` one."""

    noun: str
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    differing: list[int] = field(default_factory=list)

    @property
    def digest(self) -> str:
        """Identifies the changes, so that a confirmation applies what was previewed."""
        changes = json.dumps([self.created, self.updated, self.removed])
        return hashlib.sha256(changes.encode()).hexdigest()

    @property
    def summary(self) -> str:
        return (f"{len(self.created)} to create, {len(self.updated)} to update, "
                f"{len(self.unchanged)} unchanged, {len(self.removed)} to remove")


class ImportRefused(InvalidParameter):
    """Entries differ from the stored ones and updates were not allowed; `plan` says which."""

    def __init__(self, plan: ImportPlan) -> None:
        shown = "; ".join(plan.updated[:SHOWN])
        more = f"; and {len(plan.updated) - SHOWN} more" if len(plan.updated) > SHOWN else ""
        super().__init__(f"{len(plan.updated)} {plan.noun}(s) in the file differ from the "
                         f"stored ones, nothing imported: {shown}{more}")
        self.plan = plan


def _ensure_allowed(plan: ImportPlan, *, update: bool, expected: str | None) -> None:
    if expected is not None and plan.digest != expected:
        raise InvalidParameter(f"The stored {plan.noun}s changed since the preview; nothing "
                               "imported, preview the import again")
    if plan.updated and not update:
        raise ImportRefused(plan)


def _report(progress: Progress | None, done: int, total: int) -> None:
    if progress and total:
        progress(done, total)


# Rules ------------------------------------------------------------------------------------

RuleKey = tuple[str, str, int]


def _rule_line(consumer: str, instance_id: str, priority: int) -> str:
    return f"{consumer} → {instance_id} (priority {priority})"


def _stored_rules(rules: Sequence, *, replace: bool) -> dict[RuleKey, tuple[uuid.UUID, str]]:
    """Stored rules by key, with id and instance id: every rule for a replace, else those
    with the file's keys."""
    if not replace:
        return rules_stored(rules)
    columns = ("consumer", "service_definition", "priority", "id", "service_instance_id")
    return {(c, s, p): (rule_id, instance_id) for c, s, p, rule_id, instance_id
            in Rule.objects.values_list(*columns).iterator(5000)}


@dataclass
class _RuleWork:
    plan: ImportPlan
    create: list = field(default_factory=list)
    update: list[tuple[uuid.UUID, object]] = field(default_factory=list)
    remove: list[tuple[uuid.UUID, str]] = field(default_factory=list)  # (id, consumer)


def _rule_work(rules: Sequence, *, replace: bool) -> _RuleWork:
    stored = _stored_rules(rules, replace=replace)
    work = _RuleWork(ImportPlan("rule"))
    for position, rule in enumerate(rules):
        found = stored.pop(rule.key, None)
        line = _rule_line(rule.consumer, str(rule.instance), rule.priority)
        if found is None:
            work.create.append(rule)
            work.plan.created.append(line)
        elif found[1] == str(rule.instance):
            work.plan.unchanged.append(line)
        else:
            work.update.append((found[0], rule))
            work.plan.updated.append(f"{line}, was {found[1]}")
            work.plan.differing.append(position)
    if replace:
        for (consumer, _, priority), (rule_id, instance_id) in sorted(stored.items()):
            work.remove.append((rule_id, consumer))
            work.plan.removed.append(_rule_line(consumer, instance_id, priority))
    return work


def rule_import_plan(rules: Sequence, *, replace: bool) -> ImportPlan:
    """What `rule_import` would change now (reads only)."""
    return _rule_work(rules, replace=replace).plan


def _rules_write(work: _RuleWork, requester: str, progress: Progress | None) -> None:
    now = timezone.now()
    removed = [rule_id for rule_id, _ in work.remove]
    for start in range(0, len(removed), _CHUNK):
        Rule.objects.filter(id__in=removed[start:start + _CHUNK]).delete()
    total = len(work.update) + len(work.create)
    Rule.objects.bulk_update(
        [Rule(id=rule_id, service_instance_id=str(rule.instance), updated_by=requester,
              updated_at=now) for rule_id, rule in work.update],
        ["service_instance_id", "updated_by", "updated_at"], batch_size=_CHUNK)
    if work.update:
        _report(progress, len(work.update), total)
    for start in range(0, len(work.create), _CHUNK):
        rules_insert(work.create[start:start + _CHUNK], requester, now)
        _report(progress, len(work.update) + min(start + _CHUNK, len(work.create)), total)


@retry_on_conflict
@transaction.atomic
def rule_import(rules: Sequence, *, requester: str, replace: bool = False, update: bool = False,
                expected: str | None = None, progress: Progress | None = None) -> ImportPlan:
    """Apply an import of validated rules in one transaction, all or nothing, and return what
    it changed. The rule sets involved are locked first (as every rule writer does), so the
    plan cannot change while it is applied. `expected`: the digest of a previewed plan; a
    different plan is refused."""
    rule_sets = {(rule.consumer, rule.instance.service_definition) for rule in rules}
    if replace:
        rule_sets.update(Rule.objects.values_list("consumer", "service_definition").distinct())
    rule_sets_lock(rule_sets)
    work = _rule_work(rules, replace=replace)
    _ensure_allowed(work.plan, update=update, expected=expected)
    written = ({rule.consumer for rule in work.create}
               | {rule.consumer for _, rule in work.update}
               | {consumer for _, consumer in work.remove})
    if len(written) > BULK_WRITE_CONSUMERS:  # the consumers whose rules change, not locked
        bulk_write_declare()  # one change for the feed, not one per consumer
    _rules_write(work, requester, progress)
    processing_nudge()
    return work.plan


# Service instances --------------------------------------------------------------------------


def _interfaces(interfaces: Iterable) -> list[tuple]:
    return [(i.template_name, i.protocol, i.policy, i.properties) for i in interfaces]


def _differences(stored: ServiceInstance, valid: ValidInstance) -> list[str]:
    """The create-shape fields in which a stored instance differs from a file's."""
    return [name for name, differs in (
        ("expiresAt", stored.expires_at != valid.expires_at),
        ("metadata", stored.metadata != valid.metadata),
        ("interfaces", _interfaces(stored.interfaces.all()) != _interfaces(valid.interfaces)),
    ) if differs]


@dataclass
class _InstanceWork:
    plan: ImportPlan
    store: list[ValidInstance] = field(default_factory=list)  # created and updated
    remove: list[str] = field(default_factory=list)


def _instance_work(instances: Sequence[ValidInstance], *, replace: bool) -> _InstanceWork:
    ids = [instance.instance_id for instance in instances]
    stored: dict[str, ServiceInstance] = {}
    for start in range(0, len(ids), _CHUNK):
        stored.update((i.service_instance_id, i) for i in ServiceInstance.objects.filter(
            service_instance_id__in=ids[start:start + _CHUNK]).prefetch_related("interfaces"))
    work = _InstanceWork(ImportPlan("instance"))
    for position, instance in enumerate(instances):
        found = stored.get(instance.instance_id)
        differences = _differences(found, instance) if found else []
        if found is None:
            work.plan.created.append(instance.instance_id)
        elif differences:
            work.plan.updated.append(f"{instance.instance_id} ({', '.join(differences)})")
            work.plan.differing.append(position)
        else:
            work.plan.unchanged.append(instance.instance_id)
            continue
        work.store.append(instance)
    if replace:
        work.remove = sorted(set(ServiceInstance.objects.values_list(
            "service_instance_id", flat=True).iterator(5000)) - set(ids))
        work.plan.removed.extend(work.remove)
    return work


def instance_import_plan(instances: Sequence[ValidInstance], *, replace: bool) -> ImportPlan:
    """What `instance_import` would change now (reads only)."""
    return _instance_work(instances, replace=replace).plan


@retry_on_conflict
@transaction.atomic
def instance_import(instances: Sequence[ValidInstance], *, replace: bool = False,
                    update: bool = False, expected: str | None = None,
                    progress: Progress | None = None) -> ImportPlan:
    """Apply an import of validated instances in one transaction, all or nothing, and return
    what it changed. The ids involved are locked first (as every instance writer does); an
    updated instance is replaced as a create of its id replaces it (store.services.instances).
    `expected` as for `rule_import`."""
    ids = {instance.instance_id for instance in instances}
    if replace:
        ids.update(ServiceInstance.objects.values_list("service_instance_id", flat=True))
    instances_lock(ids)
    work = _instance_work(instances, replace=replace)
    _ensure_allowed(work.plan, update=update, expected=expected)
    if work.remove:
        instance_delete_many(instance_ids=work.remove)
    if work.store:
        instances_store(work.store, progress=lambda done: _report(progress, done,
                                                                  len(work.store)))
    return work.plan
