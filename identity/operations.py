"""Which published operation a view serves (issue 13 item 4).

Every API view with an identity declares it in `service_operation`: one
`serviceregistry.published.operation(...)`, or a mapping of HTTP method to one where a path
serves several operations (e.g. `DELETE .../simple-store/query` removes). The management
check, the ConsumerAuthorization question, the Django permission and the choice between 503
and 401 for an unverifiable identity read it here; tests/serviceregistry checks that every
published operation is served by a view declaring it.
"""
from collections.abc import Mapping

from serviceregistry.published import ServiceOperation, operation

PULL = operation("serviceOrchestration", "pull")


def served_operation(view: object, method: str) -> ServiceOperation | None:
    """The operation `view` serves for `method`; None for a view that declares none (echo,
    the token verification, unknown paths)."""
    declared = getattr(view, "service_operation", None)
    if isinstance(declared, Mapping):
        declared = declared.get(method.upper())
    return declared if isinstance(declared, ServiceOperation) else None
