from django.urls import path

from orchestration.apis import OrchestrationPullApi
from orchestration.history_apis import HistoryQueryApi

urlpatterns = [
    path("pull", OrchestrationPullApi.as_view()),
    path("mgmt/history/query", HistoryQueryApi.as_view()),
]
