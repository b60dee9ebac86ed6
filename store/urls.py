from django.urls import path

from store.apis import (
    RuleCreateApi,
    RuleModifyPrioritiesApi,
    RuleQueryApi,
    RuleRemoveApi,
    RuleRemoveAtStoreApi,
)

SIMPLE_STORE = "mgmt/simple-store"

urlpatterns = [
    path(f"{SIMPLE_STORE}/query", RuleQueryApi.as_view()),
    path(f"{SIMPLE_STORE}/create", RuleCreateApi.as_view()),
    path(f"{SIMPLE_STORE}/modify-priorities", RuleModifyPrioritiesApi.as_view()),
    path(f"{SIMPLE_STORE}/remove", RuleRemoveApi.as_view()),
    path(SIMPLE_STORE, RuleRemoveAtStoreApi.as_view()),
]
