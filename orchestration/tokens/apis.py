"""Authorization token verification (SPEC §5 item 9): a provider asks whether a token a
consumer presented was issued for it and may still be used."""
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.name_fields import ServiceDefinitionField, SystemNameField
from api.schema import error_responses
from api.shapes import NoneLeftOut
from orchestration.openapi_examples import TOKEN
from orchestration.tokens.services import token_verify

TAG = ["Authorization tokens"]


class TokenVerificationSerializer(NoneLeftOut, serializers.Serializer):
    """`{"verified": false}` alone when the token does not verify, so that the answer tells
    nothing about tokens of other providers; the details otherwise."""
    # Without a token every detail is skipped (not required); usageLeft is None but for
    # usage-limited tokens: NoneLeftOut.

    verified = serializers.BooleanField()
    consumer = SystemNameField(source="token.consumer", required=False)
    provider = SystemNameField(source="token.provider", required=False)
    target = ServiceDefinitionField(source="token.target", required=False,
                                   help_text="Service definition.")
    scope = serializers.CharField(source="token.scope", required=False,
                                  help_text="Operation, or the service definition.")
    expiresAt = serializers.DateTimeField(source="token.expires_at", required=False)
    tokenType = serializers.CharField(source="token.token_type", required=False)
    usageLeft = serializers.IntegerField(
        source="token.usage_left", required=False,
        help_text="Uses left after this one; usage-limited tokens only.")


class AuthorizationTokenVerifyApi(APIView):
    """`GET .../authorization-token/verify/{token}`: the requester is the provider."""

    @extend_schema(operation_id="authorizationTokenVerify", tags=TAG,
                   parameters=[OpenApiParameter("token", str, OpenApiParameter.PATH,
                                                description="The token as issued by pull.",
                                                examples=[TOKEN])],
                   responses={200: TokenVerificationSerializer, **error_responses()})
    def get(self, request: Request, token: str) -> Response:
        verification = token_verify(raw=token, provider=request.user.name)
        return Response(TokenVerificationSerializer(verification).data)
