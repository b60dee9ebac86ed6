from django.urls import path

from orchestration.apis import OrchestrationPullApi

urlpatterns = [
    path("pull", OrchestrationPullApi.as_view()),
]
