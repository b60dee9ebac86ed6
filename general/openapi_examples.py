"""Request examples of general management (docs/openapi.md "Examples")."""
from drf_spectacular.utils import OpenApiExample

LOGS = OpenApiExample("Recent errors of one component", request_only=True, value={
    "from": "2025-02-01T00:00:00Z", "severity": "ERROR", "logger": "notifications",
    "pagination": {"page": 0, "size": 20, "direction": "DESC", "sortField": "entryDate"}})
CONFIG_KEYS = OpenApiExample("Where and how this system is reached",
                             value=["server.port", "authentication.policy"])
