"""What pull reads, as plain immutable records: a consumer's rules, the catalog instances
behind them and their reservations, produced alike by both sources of pull (`PullSource`:
the database and the snapshot). The snapshot shares records between requests, so nothing may
modify them or the dicts they hold: pull builds new dicts for what it changes.
"""
import datetime as dt
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol


class PullRule(NamedTuple):
    """A rule as pull needs it: which instance, for which service definition, how preferred.
    A tuple, so that a plain tuple of the same values finds it in a dict (the snapshot's
    record sharing, orchestration/snapshot/loading.py)."""

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
class FlexibleRuleRecord:
    """A flexible store rule as pull reads it (store.models.FlexibleRule's fields; the
    requirements are lists of requirement objects or None)."""

    id: uuid.UUID
    consumer: str | None
    consumer_metadata: list | None
    provider: str | None
    provider_metadata: list | None
    service_definition: str
    interface_template: str | None
    service_metadata: list | None
    min_version: str | None
    max_version: str | None
    priority: int
    created_at: dt.datetime

    @property
    def order(self) -> tuple:
        """Pull takes rules best priority first, then by service definition, then older."""
        return self.priority, self.service_definition, self.created_at, self.id


# The FlexibleRule columns a FlexibleRuleRecord is made of, in its fields' order.
FLEXIBLE_RULE_COLUMNS = ("id", "consumer", "consumer_metadata", "provider", "provider_metadata",
                         "service_definition", "interface_template", "service_metadata",
                         "min_version", "max_version", "priority", "created_at")


@dataclass(frozen=True, slots=True)
class Reservation:
    """A lock of an instance: `owner` has it exclusively until `expires_at`."""

    owner: str
    expires_at: dt.datetime


def interface_record(template_name: str, protocol: str, policy: str,
                     properties: dict[str, Any]) -> dict[str, Any]:
    return {"templateName": template_name, "protocol": protocol, "policy": policy,
            "properties": properties}


class PullSource(Protocol):
    """What pull reads, from one source: the database (`selectors.DATABASE`) or a view of the
    snapshot (`orchestration.snapshot.state.SnapshotView`). The two answer alike for the same
    committed state; pull's algorithm never knows which one it reads."""

    def consumer_rules(self, *, consumer: str, service_definition: str | None,
                       ) -> list[PullRule]:
        """The consumer's rules (of `service_definition` only, when given), in pull order."""

    def local_instances(self, instance_ids: Iterable[str]) -> dict[str, CatalogInstance]:
        """The local catalog's entries of these ids, by id; unknown ids are absent."""

    def local_instances_of(self, service_definitions: Iterable[str],
                           ) -> dict[str, CatalogInstance]:
        """The local catalog's instances of these service definitions, by id."""

    def flexible_rules(self, *, consumer: str, service_definition: str | None,
                       ) -> list[FlexibleRuleRecord]:
        """The flexible rules that may apply to the consumer (naming it, or selecting
        consumers by metadata), of `service_definition` only when given, in pull order."""

    def active_locks(self, instance_ids: Iterable[str], *,
                     now: dt.datetime) -> dict[str, Reservation]:
        """The reservations of these instances that are live at `now`, by instance id."""
