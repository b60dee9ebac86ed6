"""The rule and instance files: what export writes and import reads, and `RULES`/`INSTANCES`,
what the management commands and the admin's Import/Export pages do with them
(docs/decisions.md, "Import and export").

Reading parses the JSON, type-checks it with the API's create serializer and validates every
entry with the store's rules; every problem is an InvalidParameter naming the file or entry."""
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from django.utils import timezone
from rest_framework.exceptions import ValidationError
from rest_framework.serializers import Serializer

from api.errors import first_validation_message
from api.input_safety import json_problem
from conventions.exceptions import InvalidParameter
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
from store.services.rules import ValidRule, rule_validate, rules_ensure_distinct


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


def _document(content: bytes | str, *, source: str, serializer_class: type[Serializer]) -> dict:
    try:
        data = json.loads(content)
    except ValueError as exc:  # also bytes that are not UTF-8
        raise InvalidParameter(f"Cannot read {source}: {exc}") from exc
    problem = json_problem(data)  # what the database cannot store, as for request bodies
    if problem is not None:
        raise InvalidParameter(f"Cannot read {source}: {problem}")
    serializer = serializer_class(data=data)
    try:
        serializer.is_valid(raise_exception=True)
    except ValidationError as exc:
        raise InvalidParameter(first_validation_message(exc.detail)) from exc
    return serializer.validated_data


def rules_read(content: bytes | str, source: str) -> list[ValidRule]:
    """The rules of an import file (create shape, `entries` or `candidates`; exports work)."""
    drafts = rule_drafts_from(_document(content, source=source,
                                        serializer_class=RuleCreateSerializer))
    rules = []
    for index, draft in enumerate(drafts):
        if draft is None:
            raise InvalidParameter(f"entries[{index}]: null entry")
        try:
            rules.append(rule_validate(draft))
        except InvalidParameter as exc:
            raise InvalidParameter(f"entries[{index}]: {exc.message}") from exc
    rules_ensure_distinct(rules)
    return rules


def instances_read(content: bytes | str, source: str) -> list[ValidInstance]:
    """The instances of an import file (`{"instances": [...]}`, as export writes it)."""
    now = timezone.now()
    drafts = instance_drafts_from(_document(content, source=source,
                                            serializer_class=InstanceCreateSerializer))
    seen, instances = set(), []
    for index, draft in enumerate(drafts):
        if draft is None:
            raise InvalidParameter(f"instances[{index}]: null entry")
        try:
            instance = instance_validate(draft, now=now)
        except InvalidParameter as exc:
            raise InvalidParameter(f"instances[{index}]: {exc.message}") from exc
        if instance.instance_id in seen:
            raise InvalidParameter(f"instances[{index}]: Duplicated instance: "
                                   f"{instance.instance_id}")
        seen.add(instance.instance_id)
        instances.append(instance)
    return instances


@dataclass(frozen=True)
class Transfer:
    """How one model's entries are exported, read, planned and imported."""

    noun: str
    filename: str
    export: Callable[[], Export]
    read: Callable[[bytes | str, str], Sequence]  # (content, source)
    plan: Callable[..., ImportPlan]  # (entries, replace=)
    apply: Callable[..., ImportPlan]  # (entries, requester=, replace=, update=, expected=, …)


RULES = Transfer("rule", "rules.json", rules_export, rules_read, rule_import_plan, rule_import)
INSTANCES = Transfer("instance", "instances.json", instances_export, instances_read,
                     instance_import_plan,
                     lambda entries, requester, **options: instance_import(entries, **options))
