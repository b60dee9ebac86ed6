"""OpenAPI pieces shared by every endpoint."""
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers

_MEANINGS = {
    400: "Invalid request (INVALID_PARAMETER)",
    401: "No or invalid identity (AUTH)",
    403: "No permission (FORBIDDEN)",
    423: "Locked (LOCKED)",
    500: "Unexpected error (INTERNAL_SERVER_ERROR)",
    503: "A system this one depends on failed (EXTERNAL_SERVER_ERROR)",
}


class ErrorResponseSerializer(serializers.Serializer):
    errorMessage = serializers.CharField()
    errorCode = serializers.IntegerField(help_text="Equals the HTTP status.")
    exceptionType = serializers.ChoiceField(choices=[
        "ARROWHEAD", "INVALID_PARAMETER", "AUTH", "FORBIDDEN", "DATA_NOT_FOUND", "LOCKED",
        "INTERNAL_SERVER_ERROR", "EXTERNAL_SERVER_ERROR",
    ])
    origin = serializers.CharField(help_text='"<METHOD> <path>"')

    class Meta:
        ref_name = "ErrorResponse"


def error_responses(*statuses: int) -> dict[int, OpenApiResponse]:
    """The error answers of an operation: always 400, 401 and 500, plus the given ones."""
    codes = sorted({400, 401, 500, *statuses})
    return {code: OpenApiResponse(ErrorResponseSerializer, description=_MEANINGS[code])
            for code in codes}
