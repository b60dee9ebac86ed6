"""May the requester manage: the management policies of SPEC §2 (MANAGEMENT_POLICY;
docs/identity.md "Management permission"). A management operation is one a view declares from
a management service (api/operations.py), not a path that happens to contain `/mgmt/`.
"""
import logging

from django.conf import settings
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from api.operations import ServiceOperation, served_operation
from conventions import names
from conventions.exceptions import Forbidden
from identity.authentication import Requester
from identity.consumer_authorization import (
    ConsumerAuthorizationUnavailable,
    management_granted,
)

logger = logging.getLogger("serviceorchestration.auth")

NO_MANAGEMENT_PERMISSION = "Requester has no management permission"


def _whitelisted(name: str) -> bool:
    return name in {names.normalize_system_name(entry) for entry in settings.MANAGEMENT_WHITELIST}


def has_management_permission(requester: Requester, operation: ServiceOperation) -> bool:
    """Raises ConsumerAuthorizationUnavailable when the `authorization` policy cannot ask."""
    if requester.is_operator:
        return True
    policy = settings.MANAGEMENT_POLICY
    if policy == "sysop-only":
        return False
    if _whitelisted(requester.name):
        return True
    if policy == "permission":
        return operation.permission is not None and requester.has_perm(operation.permission)
    if policy == "authorization":
        return bool(operation.service) and management_granted(requester.name, operation)
    return False


class ManagementPermission(BasePermission):
    """Refuses a management operation to a requester without management permission: 403
    `Requester has no management permission`; with the reason when ConsumerAuthorization
    could not be asked (logged)."""

    def has_permission(self, request: Request, view: object) -> bool:
        operation = served_operation(view, request.method)
        if operation is None or not operation.is_management:
            return True
        try:
            allowed = has_management_permission(request.user, operation)
        except ConsumerAuthorizationUnavailable as error:
            logger.warning("Management permission of %s for %s/%s could not be checked: %s",
                           request.user.name, operation.service, operation.name, error)
            raise Forbidden(f"{NO_MANAGEMENT_PERMISSION}: ConsumerAuthorization is not "
                            "available") from error
        if not allowed:
            raise Forbidden(NO_MANAGEMENT_PERMISSION)
        return True
