from django.urls import path

from orchestration.locks.apis import LockCreateApi, LockQueryApi, LockRemoveApi

LOCKS = "mgmt/lock"

# `remove/{owner}/<owner>` too: the Java common library appends path parameters to the
# registered path (docs/decisions.md, "Path parameters from Java clients").
urlpatterns = [
    path(f"{LOCKS}/create", LockCreateApi.as_view()),
    path(f"{LOCKS}/query", LockQueryApi.as_view()),
    path(f"{LOCKS}/remove/<str:owner>", LockRemoveApi.as_view()),
    path(f"{LOCKS}/remove/{{owner}}/<str:owner>", LockRemoveApi.as_view()),
]
