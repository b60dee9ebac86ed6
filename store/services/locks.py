"""Locks that make concurrent store writers wait for each other in one fixed order
(database.advisory_locks).

A rule set is the rules of one (consumer, service definition): its priorities are unique, so
every writer of a rule set (create, modify priorities, remove) first locks its rule sets. Row
locks cannot do this: a create's rows do not exist yet, and the unique index of the priorities
is deferrable, so two INSERTs of the same keys only check each other at the end of their
statements and then wait for each other ("deadlock detected"). Service instances are locked
by id the same way: a create and a remove of the same new id would otherwise race to insert
it twice.
"""
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
