from django.urls import path

from general.apis import GetConfigApi, LogsApi

urlpatterns = [
    path("mgmt/logs", LogsApi.as_view()),
    path("mgmt/get-config", GetConfigApi.as_view()),
]
