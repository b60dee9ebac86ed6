"""What pull reads, as plain immutable records: a consumer's rules, the catalog instances
behind them and the reservations of those instances.

Both sources of pull produce them: the database (orchestration.pull.selectors, for a pull inside a
transaction and whenever the snapshot is not usable) and the in-memory snapshot of each web
process (orchestration.snapshot.state). Records are shared between requests by the snapshot, so
nothing may modify them or the dicts they hold: pull builds new dicts for what it changes
(narrowed interfaces, results).
"""
import datetime as dt
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class PullRule:
    """A rule as pull needs it: which instance, for which service definition, how preferred."""

    service_instance_id: str
    service_definition: str
    priority: int


@dataclass(frozen=True, slots=True)
class CatalogInstance:
    """An instance as pull offers it. `interfaces` are in the wire shape of a result
    (`{templateName, protocol, policy, properties}`), in their order. `pk` is the catalog row
    (None for an instance of the ServiceRegistry, which has no latency measurement)."""

    service_instance_id: str
    pk: int | None
    expires_at: dt.datetime | None
    metadata: dict[str, Any]
    interfaces: tuple[dict[str, Any], ...]


@dataclass(frozen=True, slots=True)
class Reservation:
    """A lock of an instance: `owner` has it exclusively until `expires_at`."""

    owner: str
    expires_at: dt.datetime


def interface_record(template_name: str, protocol: str, policy: str,
                     properties: dict[str, Any]) -> dict[str, Any]:
    return {"templateName": template_name, "protocol": protocol, "policy": policy,
            "properties": properties}


def rules_in_pull_order(rules: list[PullRule]) -> list[PullRule]:
    """Best priority first, ties by service definition (SPEC §5 step 1)."""
    return sorted(rules, key=lambda rule: (rule.priority, rule.service_definition))
