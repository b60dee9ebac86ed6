"""`GET /serviceorchestration/monitor/health` (observability/health.py): readiness, in the
OpenAPI document like echo. Here rather than with echo in api/views.py: the HTTP edge sits
below observability and does not import it."""
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.schema import ErrorResponseSerializer
from observability.health import UP, health


class HealthSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["UP", "DOWN"])
    components = serializers.DictField(
        child=serializers.DictField(child=serializers.CharField()),
        help_text="database (with unapplied migrations), celeryBroker and mqttBroker when "
                  "configured: each {status, error?}")


class HealthApi(APIView):
    """Readiness; needs no identity: 200 when every dependency answers, else 503 naming the
    failing one (observability/health.py)."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(operation_id="health", auth=[], responses={
        200: HealthSerializer, 503: HealthSerializer,
        406: OpenApiResponse(ErrorResponseSerializer, description="Content negotiation failed")},
        examples=[OpenApiExample("down", response_only=True, status_codes=["503"], value={
            "status": "DOWN", "components": {
                "database": {"status": "UP"},
                "mqttBroker": {"status": "DOWN", "error": "no answer within 3 s"}}})])
    def get(self, request: Request) -> Response:
        current = health()
        return Response(current, status=200 if current["status"] == UP else 503)
