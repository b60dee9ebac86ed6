"""The operations of the other orchestration strategy's store are answered like an unknown
path (issue 33): after identity and the management check, a 404 `No such endpoint`."""
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from api.operations import is_served, served_operation
from conventions.exceptions import DataNotFound


class ServedByStrategy(BasePermission):
    def has_permission(self, request: Request, view: object) -> bool:
        operation = served_operation(view, request.method)
        if operation is not None and not is_served(operation):
            raise DataNotFound(f"No such endpoint: {request.method} {request.path}")
        return True
