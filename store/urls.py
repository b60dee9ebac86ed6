from django.urls import path

from store.apis.flexible_rules import (
    FlexibleRuleCreateApi,
    FlexibleRuleQueryApi,
    FlexibleRuleRemoveApi,
)
from store.apis.instances import (
    InstanceCreateApi,
    InstanceQueryApi,
    InstanceRemoveApi,
    InstanceUpdateApi,
)
from store.apis.rules import (
    RuleCreateApi,
    RuleModifyPrioritiesApi,
    RuleQueryApi,
    RuleRemoveApi,
    RuleRemoveAtStoreApi,
)

SIMPLE_STORE = "mgmt/simple-store"
FLEXIBLE_STORE = "mgmt/flexible-store"
INSTANCES = "mgmt/service-instances"

urlpatterns = [
    path(f"{SIMPLE_STORE}/query", RuleQueryApi.as_view()),
    path(f"{SIMPLE_STORE}/create", RuleCreateApi.as_view()),
    path(f"{SIMPLE_STORE}/modify-priorities", RuleModifyPrioritiesApi.as_view()),
    path(f"{SIMPLE_STORE}/remove", RuleRemoveApi.as_view()),
    path(SIMPLE_STORE, RuleRemoveAtStoreApi.as_view()),
    path(f"{FLEXIBLE_STORE}/query", FlexibleRuleQueryApi.as_view()),
    path(f"{FLEXIBLE_STORE}/create", FlexibleRuleCreateApi.as_view()),
    path(f"{FLEXIBLE_STORE}/remove", FlexibleRuleRemoveApi.as_view()),
    path(f"{INSTANCES}/create", InstanceCreateApi.as_view()),
    path(f"{INSTANCES}/update", InstanceUpdateApi.as_view()),
    path(f"{INSTANCES}/query", InstanceQueryApi.as_view()),
    path(f"{INSTANCES}/remove", InstanceRemoveApi.as_view()),
]
