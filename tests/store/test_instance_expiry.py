import datetime as dt

import pytest
from django.conf import settings
from django.utils import timezone

from store.models import ServiceInstance, ServiceInterface
from store.tasks import remove_expired_instances_task
from tests.factories import make_instances
from tests.store.helpers import instance_body

pytestmark = pytest.mark.django_db


class InstanceExpiryTests:
    def test_it_removes_expired_instances_with_their_interfaces(self):
        make_instances(instance_body("Old"), instance_body("Fresh"), instance_body("Forever"))
        now = timezone.now()
        ServiceInstance.objects.filter(provider="Old").update(expires_at=now - dt.timedelta(1))
        ServiceInstance.objects.filter(provider="Fresh").update(expires_at=now + dt.timedelta(1))
        assert remove_expired_instances_task.apply().get() == 1
        assert sorted(ServiceInstance.objects.values_list("provider", flat=True)) == [
            "Forever", "Fresh"]
        assert ServiceInterface.objects.count() == 2

    def test_it_is_scheduled_by_beat_at_the_configured_interval(self):
        entry = settings.CELERY_BEAT_SCHEDULE["remove-expired-instances"]
        assert entry["task"] == remove_expired_instances_task.name
        assert entry["schedule"] == float(settings.INSTANCE_CLEANUP_INTERVAL_SECONDS)
