"""Locks that make concurrent store writers wait for each other in one fixed order
(database.advisory_locks): every writer of a rule set (consumer, service definition) or of an
instance id takes them first. Row locks cannot: a create's rows do not exist yet, and the
deferrable priority index lets two INSERTs of the same keys deadlock (docs/rule-store.md,
"Concurrent writers")."""
from collections.abc import Iterable

from database.advisory_locks import advisory_locks

_RULE_SETS = "rule-set"
_INSTANCES = "service-instance"


def _rule_set_name(consumer: str, service_definition: str) -> str:
    return f"{consumer}\0{service_definition}"


def rule_sets_lock(rule_sets: Iterable[tuple[str, str]]) -> None:
    """Lock the rule sets (consumer, service definition) until the transaction ends."""
    advisory_locks(_RULE_SETS, (_rule_set_name(*rule_set) for rule_set in rule_sets))


def instances_lock(instance_ids: Iterable[str]) -> None:
    """Lock the service instance ids until the transaction ends."""
    advisory_locks(_INSTANCES, instance_ids)
