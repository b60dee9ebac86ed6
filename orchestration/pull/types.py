"""Values crossing the boundary between the orchestration API and its services."""
import datetime as dt
from dataclasses import dataclass, field
from typing import Any

FLAGS = ("MATCHMAKING", "ONLY_PREFERRED", "ONLY_EXCLUSIVE", "ALLOW_TRANSLATION",
         "ALLOW_INTERCLOUD", "ONLY_INTERCLOUD")
# Flags the Java simple store accepts and ignores, which we do not act on either (ONLY_EXCLUSIVE
# is one too when no exclusivityDuration is given). SPEC §5 step 10.
IGNORED_FLAGS = ("ALLOW_TRANSLATION", "ALLOW_INTERCLOUD", "ONLY_INTERCLOUD")


@dataclass(frozen=True)
class ServiceRequirement:
    """What the consumer asks for; every value normalized and validated. An empty tuple means
    the condition was not given."""

    service_definition: str | None = None
    operations: tuple[str, ...] = ()
    versions: tuple[str, ...] = ()
    alives_at: dt.datetime | None = None
    metadata_requirements: tuple[dict, ...] = ()
    interface_template_names: tuple[str, ...] = ()
    interface_address_types: tuple[str, ...] = ()
    interface_property_requirements: tuple[dict, ...] = ()
    security_policies: tuple[str, ...] = ()
    preferred_providers: tuple[str, ...] = ()

    @property
    def catalog_fields(self) -> tuple[str, ...]:
        """The conditions given that only an instance's data can answer, by their wire names
        in the order the Java simple store lists them in `ignoredFields: [...]`: a rule whose
        instance is unknown is kept without them (SPEC §5 step 2). `versions` is not one: the
        instance id carries the version."""
        given = (("operations", self.operations), ("alivesAt", self.alives_at),
                 ("metadataRequirements", self.metadata_requirements),
                 ("interfaceTemplateNames", self.interface_template_names),
                 ("interfaceAddressTypes", self.interface_address_types),
                 ("interfacePropertyRequirements", self.interface_property_requirements),
                 ("securityPolicies", self.security_policies))
        return tuple(name for name, value in given if value)

    @property
    def filters_interfaces(self) -> bool:
        return bool(self.operations or self.interface_template_names
                    or self.interface_address_types or self.interface_property_requirements
                    or self.security_policies)


@dataclass(frozen=True)
class OrchestrationRequest:
    requirement: ServiceRequirement = field(default_factory=ServiceRequirement)
    flags: frozenset[str] = frozenset()
    qos_requirements: dict[str, Any] | None = None
    exclusivity_duration: int | None = None
    # Flags present in the request (true or false) that are ignored, in the order the Java
    # simple store names them in its `ignoredFlags: [...]` warning.
    ignored_flags: tuple[str, ...] = ()

    def has(self, flag: str) -> bool:
        return flag in self.flags


@dataclass
class OrchestrationResultEntry:
    """One provider instance offered to the consumer."""

    service_instance_id: str
    provider: str
    service_definition: str
    version: str
    alive_until: dt.datetime | None = None
    exclusive_until: dt.datetime | None = None
    metadata: dict | None = None
    interfaces: list[dict] | None = None
    authorization_tokens: dict[str, dict[str, dict]] | None = None


@dataclass(frozen=True)
class OrchestrationResult:
    results: list[OrchestrationResultEntry]
    warnings: list[str]
    # A preview (`orchestrate_preview`) that committing would change: it would reserve instances or
    # issue tokens. Always False for a committed orchestration.
    commit_differs: bool = False
