"""Flexible rules from files (issue 33, docs/flexible-store.md "Import and export"): this
service's export (the create body, `{"entries": [...]}`), or Arrowhead 4.6's flexible store
rules (`OrchestratorStoreFlexibleRequestDTO`, or the `data` of its list response), translated
to ours. Nothing here writes: `flexible_imports_plan` says what an import would create, skip
and refuse; store.services.flexible_rules stores."""
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from conventions.exceptions import InvalidParameter
from store.models import FlexibleRule
from store.services.flexible_rules import (
    FlexibleRuleDraft,
    ValidFlexibleRule,
    flexible_rule_validate,
)

_CHUNK = 1000  # fingerprints one query asks for

# Arrowhead 4.6 interface names with an Arrowhead 5 interface template.
ARROWHEAD_46_INTERFACES = {"HTTP-INSECURE-JSON": "generic_http",
                           "HTTP-SECURE-JSON": "generic_https"}


@dataclass
class FlexibleImportPlan:
    """What an import would do: create `created` (each with the number of its entry), skip
    `stored` (the same rule is stored already), and refuse `refused` (entry number, why)."""

    created: list[tuple[int, ValidFlexibleRule]] = field(default_factory=list)
    stored: list[tuple[int, ValidFlexibleRule]] = field(default_factory=list)
    refused: list[tuple[int, str]] = field(default_factory=list)


def _metadata(value: Any, what: str) -> list[dict] | None:
    """A 4.6 metadata map (all of it must match) as one requirement object of equalities."""
    if value in (None, {}):
        return None
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise InvalidParameter(f"{what} is not a JSON object of strings")
    return [dict(value)]


def _system(value: Any, what: str) -> tuple[str | None, list[dict] | None]:
    if value is None:
        return None, None
    if not isinstance(value, dict):
        raise InvalidParameter(f"{what} is not a JSON object")
    name = value.get("systemName")
    if name is not None and not isinstance(name, str):
        raise InvalidParameter(f"{what}.systemName is not a string")
    return name, _metadata(value.get("metadata"), f"{what}.metadata")


def arrowhead_46_draft(entry: Any) -> FlexibleRuleDraft:
    """One Arrowhead 4.6 flexible rule as our draft; InvalidParameter for what has no
    translation (an interface without an Arrowhead 5 template, a malformed entry)."""
    if not isinstance(entry, dict):
        raise InvalidParameter("not a JSON object")
    consumer, consumer_metadata = _system(entry.get("consumerSystem"), "consumerSystem")
    provider, provider_metadata = _system(entry.get("providerSystem"), "providerSystem")
    interface = entry.get("serviceInterfaceName", entry.get("serviceInterface"))
    template = None
    if interface not in (None, ""):
        if not isinstance(interface, str):
            raise InvalidParameter("serviceInterfaceName is not a string")
        template = ARROWHEAD_46_INTERFACES.get(interface.strip().upper())
        if template is None:
            raise InvalidParameter(f"interface {interface} has no Arrowhead 5 interface "
                                   f"template (known: {', '.join(ARROWHEAD_46_INTERFACES)})")
    definition = entry.get("serviceDefinitionName", entry.get("serviceDefinition"))
    priority = entry.get("priority")
    if priority is not None and (type(priority) is not int):
        raise InvalidParameter("priority is not a whole number")
    return FlexibleRuleDraft(
        consumer=consumer, consumer_metadata=consumer_metadata, provider=provider,
        provider_metadata=provider_metadata,
        service_definition=definition if isinstance(definition, str) else None,
        interface_template=template,
        service_metadata=_metadata(entry.get("serviceMetadata"), "serviceMetadata"),
        priority=priority)


def arrowhead_46_entries(data: Any) -> list[Any]:
    """The rules of a 4.6 file: a list of rules, or a list response (`data`)."""
    if isinstance(data, list):
        return data
    if isinstance(data, dict) and isinstance(data.get("data"), list):
        return data["data"]
    raise InvalidParameter("An Arrowhead 4.6 file holds a JSON list of flexible rules, or an "
                           'object with them in "data"')


def flexible_imports_plan(drafts: Sequence[FlexibleRuleDraft | Exception]) -> FlexibleImportPlan:
    """Validate every draft (an exception stands for an entry that could not be read) and
    sort them into created, already stored and refused; the same rule twice in the file is
    created once."""
    plan = FlexibleImportPlan()
    seen: set[str] = set()
    for number, draft in enumerate(drafts, start=1):
        try:
            if isinstance(draft, Exception):
                raise draft
            valid = flexible_rule_validate(draft)
        except InvalidParameter as exc:
            plan.refused.append((number, exc.message))
            continue
        if valid.fingerprint not in seen:
            seen.add(valid.fingerprint)
            plan.created.append((number, valid))
    fingerprints = [rule.fingerprint for _, rule in plan.created]
    stored = {fingerprint for start in range(0, len(fingerprints), _CHUNK)
              for fingerprint in FlexibleRule.objects.filter(
                  fingerprint__in=fingerprints[start:start + _CHUNK])
              .values_list("fingerprint", flat=True)}
    plan.stored = [(n, rule) for n, rule in plan.created if rule.fingerprint in stored]
    plan.created = [(n, rule) for n, rule in plan.created if rule.fingerprint not in stored]
    return plan
