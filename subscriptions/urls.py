from django.urls import path

from subscriptions.apis import SubscribeApi, UnsubscribeApi
from subscriptions.push_apis import (
    PushQueryApi,
    PushSubscribeApi,
    PushTriggerApi,
    PushUnsubscribeApi,
    PushUnsubscribeOneApi,
    SubscriptionQueryApi,
)

# The Java common library (ArrowheadHttpService.consumeService) appends path parameters to the
# registered path as segments and leaves its `{id}` as it is: `unsubscribe/{id}/<id>`. Both
# unsubscribe operations are served at that path too, so that unmodified Java systems can end
# their subscriptions (docs/decisions.md, "Path parameters from Java clients").
urlpatterns = [
    path("subscribe", SubscribeApi.as_view()),
    path("unsubscribe/<str:subscription_id>", UnsubscribeApi.as_view()),
    path("unsubscribe/{id}/<str:subscription_id>", UnsubscribeApi.as_view()),
    path("subscriptions/query", SubscriptionQueryApi.as_view()),
    path("mgmt/push/subscribe", PushSubscribeApi.as_view()),
    path("mgmt/push/trigger", PushTriggerApi.as_view()),
    path("mgmt/push/unsubscribe", PushUnsubscribeApi.as_view()),
    path("mgmt/push/unsubscribe/<str:subscription_id>", PushUnsubscribeOneApi.as_view()),
    path("mgmt/push/unsubscribe/{id}/<str:subscription_id>", PushUnsubscribeOneApi.as_view()),
    path("mgmt/push/query", PushQueryApi.as_view()),
]
