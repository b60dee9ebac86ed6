"""Ending a reservation from the admin is a change in the feed, as its expiry is."""
import datetime as dt

import pytest
from django.utils import timezone

from orchestration.models import OrchestrationLock
from tests.subscriptions.helpers import feed_skip, feed_unread

pytestmark = pytest.mark.django_db

LOCKS = "/admin/orchestration/orchestrationlock/"


class OrchestrationLockAdminTests:
    def test_it_records_a_deleted_lock_as_a_catalog_change(self, admin_client):
        now = timezone.now()
        lock = OrchestrationLock.objects.create(
            service_instance_id="P|svc|1.0.0", owner="CarConsumer1",
            expires_at=now + dt.timedelta(minutes=5), created_at=now)
        feed_skip()
        response = admin_client.post(f"{LOCKS}{lock.pk}/delete/", {"post": "yes"})
        assert response.status_code == 302
        assert not OrchestrationLock.objects.exists()
        # The subscriptions learn that the instance is free.
        assert [c.service_instance_id for c in feed_unread()] == ["P|svc|1.0.0"]

    def test_it_records_locks_deleted_from_the_list(self, admin_client):
        now = timezone.now()
        for instance_id in ("A|svc|1.0.0", "B|svc|1.0.0"):
            OrchestrationLock.objects.create(service_instance_id=instance_id, owner="C",
                                             expires_at=now + dt.timedelta(minutes=5),
                                             created_at=now)
        feed_skip()
        response = admin_client.post(LOCKS, {
            "action": "delete_selected", "post": "yes",
            "_selected_action": list(OrchestrationLock.objects.values_list("pk", flat=True))})
        assert response.status_code == 302
        assert not OrchestrationLock.objects.exists()
        assert sorted(c.service_instance_id for c in feed_unread()) == [
            "A|svc|1.0.0", "B|svc|1.0.0"]
