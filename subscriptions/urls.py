from django.urls import path

from subscriptions.apis import SubscribeApi, UnsubscribeApi

urlpatterns = [
    path("subscribe", SubscribeApi.as_view()),
    path("unsubscribe/<str:subscription_id>", UnsubscribeApi.as_view()),
]
