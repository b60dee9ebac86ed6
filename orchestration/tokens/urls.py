"""Included under `serviceorchestration/authorization-token/` (SPEC §5 item 9)."""
from django.urls import path

from orchestration.tokens.apis import AuthorizationTokenVerifyApi

# `str` matches any non-empty segment without `/`, so base64url tokens (`-`, `_`) fit.
urlpatterns = [
    path("verify/<str:token>", AuthorizationTokenVerifyApi.as_view()),
]
