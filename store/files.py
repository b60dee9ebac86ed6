"""The rule and instance files: what export writes and import reads, and `RULES`/`INSTANCES`,
what the management commands and the admin's Import/Export pages do with them
(docs/decisions.md, "Import and export").

Reading parses the JSON, type-checks it with the API's create serializer and validates every
entry with the store's rules (store.file_entries); `Transfer.check` refuses a file with any bad
entry, naming each, and a file that cannot be read, with an InvalidParameter."""
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone
from rest_framework.serializers import Serializer

from conventions.exceptions import InvalidParameter
from store.file_entries import BadEntries, entries_typed
from store.models import Rule, ServiceInstance
from store.serializers.instances import (
    InstanceCreateSerializer,
    instance_create_shape,
    instance_drafts_from,
)
from store.serializers.rules import (
    RuleCreateSerializer,
    RuleSerializer,
    rule_drafts_from,
)
from store.services.imports import (
    ImportPlan,
    instance_import,
    instance_import_plan,
    rule_import,
    rule_import_plan,
)
from store.services.instances import ValidInstance, instance_validate
from store.services.rules import ValidRule, rule_conflict_message, rule_validate


class Export:
    """An export document as text chunks (streamed: one entry per chunk); `count` is the
    number of entries written so far."""

    def __init__(self, key: str, entries, shape, with_count: bool) -> None:
        self.key, self.entries, self.shape, self.with_count = key, entries, shape, with_count
        self.count = 0

    def __iter__(self) -> Iterator[str]:
        yield f'{{"{self.key}": ['
        for item in self.entries:
            yield ("," if self.count else "") + "\n  " + json.dumps(self.shape(item))
            self.count += 1
        yield f'\n], "count": {self.count}}}\n' if self.with_count else "\n]}\n"


def rules_export() -> Export:
    """`{"entries": [<entry in the API's shape>…], "count": N}`."""
    rules = Rule.objects.order_by("consumer", "service_definition", "priority")
    return Export("entries", rules.iterator(chunk_size=2000),
                  lambda rule: RuleSerializer(rule).data, with_count=True)


def instances_export() -> Export:
    """`{"instances": [<instance in the create request's shape>…]}`."""
    instances = (ServiceInstance.objects.order_by("service_instance_id")
                 .prefetch_related("interfaces"))
    return Export("instances", instances.iterator(chunk_size=500), instance_create_shape,
                  with_count=False)


def _document(content: bytes | str, *, source: str, serializer_class: type[Serializer],
              key_of: Callable[[Any], str]) -> tuple[str, dict, dict[int, str]]:
    """The name of the file's entry list (`key_of` the parsed file), its validated data and its
    entries refused by type (store.file_entries)."""
    try:
        data = json.loads(content)
    except ValueError as exc:  # also bytes that are not UTF-8
        raise InvalidParameter(f"Cannot read {source}: {exc}") from exc
    key = key_of(data)
    try:
        return key, *entries_typed(data, serializer_class, key=key,
                                   path_of=lambda index: f"{key}[{index}]")
    except InvalidParameter as exc:
        raise InvalidParameter(f"Cannot read {source}: {exc.message}") from exc


@dataclass
class FileEntries:
    """What an import file holds: its valid entries (`entries`) with the index of each in the
    file (`indices`), and a line for each bad one by index (`problems`); `key` is the list's
    name in the file."""

    key: str
    entries: list = field(default_factory=list)
    indices: list[int] = field(default_factory=list)
    problems: dict[int, str] = field(default_factory=dict)

    def sort_out(self, drafts: Sequence, validate: Callable, same_key: Callable) -> None:
        """Validate the drafts (None is a null entry) not refused already; `same_key(valid)`
        is the message for an entry with the key of an earlier one, or None for a new key."""
        for index, draft in enumerate(drafts):
            if index in self.problems:
                continue
            try:
                if draft is None:
                    raise InvalidParameter("null entry")
                valid = validate(draft)
                repeated = same_key(valid)
                if repeated is not None:
                    raise InvalidParameter(repeated)
            except InvalidParameter as exc:
                self.problems[index] = f"{self.key}[{index}]: {exc.message}"
                continue
            self.entries.append(valid)
            self.indices.append(index)

    def valid(self, source: str, *, differing: int = 0) -> list:
        """The entries, or BadEntries naming every bad one (`differing` of them differ from the
        stored entry)."""
        if self.problems:
            raise BadEntries(source, [self.problems[index] for index in sorted(self.problems)],
                             differing=differing)
        return self.entries


def _rules_key(data: Any) -> str:
    """The list a rule file holds its entries in: `entries`, or its alias `candidates`."""
    holds_candidates = (isinstance(data, dict) and data.get("entries") is None
                        and data.get("candidates") is not None)
    return "candidates" if holds_candidates else "entries"


def rules_read(content: bytes | str, source: str) -> FileEntries:
    """The rules of an import file (create shape, `entries` or `candidates`; exports work)."""
    key, validated, problems = _document(content, source=source, key_of=_rules_key,
                                         serializer_class=RuleCreateSerializer)
    read, seen = FileEntries(key, problems=problems), set()

    def same_key(rule: ValidRule) -> str | None:
        if rule.key in seen:
            return rule_conflict_message(*rule.key)
        seen.add(rule.key)
        return None

    read.sort_out(rule_drafts_from(validated), rule_validate, same_key)
    return read


def instances_read(content: bytes | str, source: str) -> FileEntries:
    """The instances of an import file (`{"instances": [...]}`, as export writes it)."""
    now = timezone.now()
    _, validated, problems = _document(content, source=source, key_of=lambda _: "instances",
                                       serializer_class=InstanceCreateSerializer)
    read, seen = FileEntries("instances", problems=problems), set()

    def same_key(instance: ValidInstance) -> str | None:
        if instance.instance_id in seen:
            return f"Duplicated instance: {instance.instance_id}"
        seen.add(instance.instance_id)
        return None

    read.sort_out(instance_drafts_from(validated), lambda draft: instance_validate(draft, now=now),
               same_key)
    return read


@dataclass(frozen=True)
class Transfer:
    """How one model's entries are exported, read, planned and imported."""

    noun: str
    filename: str
    export: Callable[[], Export]
    read: Callable[[bytes | str, str], FileEntries]  # (content, source)
    plan: Callable[..., ImportPlan]  # (entries, replace=)
    apply: Callable[..., ImportPlan]  # (entries, requester=, replace=, update=, expected=, …)

    def check(self, content: bytes | str, source: str, *, replace: bool,
              update: bool) -> tuple[list, ImportPlan]:
        """The entries of a file and the plan of their import, or BadEntries naming every bad
        entry at once: unreadable, invalid, the key of an earlier entry, and (without `update`)
        different from the stored entry of its key. The commands and the admin both check
        files here."""
        read = self.read(content, source)
        if update:
            entries = read.valid(source)
            return entries, self.plan(entries, replace=replace)
        plan = self.plan(read.entries, replace=replace and not read.problems)
        for position, line in zip(plan.differing, plan.updated, strict=True):
            index = read.indices[position]
            read.problems[index] = (f"{read.key}[{index}]: Differs from the stored "
                                    f"{self.noun}: {line}")
        read.valid(source, differing=len(plan.differing))
        return read.entries, plan


RULES = Transfer("rule", "rules.json", rules_export, rules_read, rule_import_plan, rule_import)
INSTANCES = Transfer("instance", "instances.json", instances_export, instances_read,
                     instance_import_plan,
                     lambda entries, requester, **options: instance_import(entries, **options))
