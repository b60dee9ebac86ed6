"""What observability asks the apps, as each app registers it from its `AppConfig.ready()`
(observability imports no app; docs/layout.md): figures of the state for the metrics, checks
of dependencies for readiness. Every Django process runs `ready()` before it serves.
"""
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

# now → the figures of one part of the state (observability/metrics_state.py names the parts
# and says what each returns); may raise DatabaseError.
StateRead = Callable[[datetime], Any]
# deadline (time.monotonic()) → None or {} when the dependency is ready, else details saying
# why it is not (the component is then DOWN with them); raising makes it DOWN with the error.
HealthCheck = Callable[[float], Mapping[str, str] | None]

_state: dict[str, StateRead] = {}
_health: dict[str, tuple[HealthCheck, Callable[[], bool]]] = {}


def register_state(name: str, read: StateRead) -> None:
    """Let the metrics read the part `name` of the state with `read(now)`."""
    _state[name] = read


def state_read(name: str) -> StateRead:
    return _state[name]


def register_health_check(name: str, check: HealthCheck, *,
                          enabled: Callable[[], bool] = lambda: True) -> None:
    """Let readiness ask `check` as the component `name` whenever `enabled()` (read at each
    measurement: tests change settings). Components are shown in the order registered."""
    _health[name] = (check, enabled)


def health_checks() -> dict[str, HealthCheck]:
    """The registered checks that are enabled now, in the order registered."""
    return {name: check for name, (check, enabled) in _health.items() if enabled()}
