from django.urls import path

from orchestration.history.apis import HistoryQueryApi
from orchestration.pull.apis import OrchestrationPullApi

urlpatterns = [
    path("pull", OrchestrationPullApi.as_view()),
    path("mgmt/history/query", HistoryQueryApi.as_view()),
]
