"""The outbox side: deliveries_create (supersede, enqueue after commit), deliveries_cancel."""
import os
import subprocess
import sys
import textwrap
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from notifications.models import NotificationDelivery
from notifications.outbox import Notification, deliveries_cancel, deliveries_create
from notifications.services import delivery_send
from notifications.sweeping import deliveries_sweep
from tests.concurrency import Background, wait_for
from tests.endpoints import BODY, make_delivery
from tests.ports import reserved_port

pytestmark = pytest.mark.django_db

Status = NotificationDelivery.Status
PROJECT = Path(django_settings.BASE_DIR)


def create(subscription_id: uuid.UUID, properties: dict, **fields) -> NotificationDelivery:
    values = {"protocol": "HTTP", "payload": BODY, "expires_at": None, **fields}
    [delivery] = deliveries_create([Notification(subscription_id=subscription_id,
                                                 properties=properties, **values)])
    return delivery


class DeliveryCreateTests:
    def test_it_stores_a_due_pending_delivery_with_normalized_fields(self, http_sink):
        properties = {"Address": "127.0.0.1", "PORT": http_sink.port, "Method": "post",
                      "path": "/n"}
        delivery = create(uuid.uuid4(), properties, protocol="http")
        delivery.refresh_from_db()
        assert (delivery.status, delivery.protocol) == (Status.PENDING, "HTTP")
        assert delivery.attempts == 0
        assert delivery.properties == {"address": "127.0.0.1", "port": http_sink.port,
                                       "method": "post", "path": "/n"}
        assert delivery.payload == BODY
        assert delivery.next_attempt_at <= timezone.now()

    def test_it_sends_only_after_the_commit(self, http_sink, django_capture_on_commit_callbacks):
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            delivery = create(uuid.uuid4(), http_sink.properties())
            assert http_sink.requests == []
        assert len(callbacks) == 1
        [request] = http_sink.requests
        assert request.json() == BODY
        delivery.refresh_from_db()
        assert delivery.status == Status.DELIVERED

    def test_it_leaves_nothing_when_the_transaction_rolls_back(self, http_sink):
        with pytest.raises(RuntimeError), transaction.atomic():
            create(uuid.uuid4(), http_sink.properties())
            raise RuntimeError("the change that caused the notification failed")
        assert not NotificationDelivery.objects.exists()

    def test_it_supersedes_pending_deliveries_of_the_same_subscription(
        self, http_sink, django_capture_on_commit_callbacks
    ):
        subscription_id = uuid.uuid4()
        delivered = make_delivery(subscription_id=subscription_id, status=Status.DELIVERED)
        pending = make_delivery(subscription_id=subscription_id)
        other = make_delivery()  # another subscription's
        with django_capture_on_commit_callbacks(execute=True):
            newest = create(subscription_id, http_sink.properties(), payload={"n": 2})
        statuses = dict(NotificationDelivery.objects.values_list("id", "status"))
        assert statuses == {delivered.id: Status.DELIVERED, pending.id: Status.CANCELLED,
                            other.id: Status.PENDING, newest.id: Status.DELIVERED}
        pending.refresh_from_db()
        assert pending.last_error == "Superseded by a newer notification"
        assert [request.json() for request in http_sink.requests] == [{"n": 2}]

    def test_it_refuses_an_unknown_protocol(self):
        with pytest.raises(ValueError, match="Unsupported notify protocol: SMTP"):
            create(uuid.uuid4(), {}, protocol="smtp")


@pytest.mark.django_db(transaction=True)
class DeliveryCreateBrokerDownTests:
    def test_it_commits_the_change_and_the_sweeper_sends_it(self, http_sink):
        """A separate process whose Celery broker (Redis URL) has nobody listening: the
        caller's transaction still commits, and the row waits for the sweeper."""
        result = _create_in_process_with_dead_broker(http_sink.properties())
        assert result.returncode == 0, result.stderr
        assert "the sweeper will send it" in result.stderr
        delivery = NotificationDelivery.objects.get()
        assert delivery.status == Status.PENDING and http_sink.requests == []
        # One sweep interval later (a task would have claimed it by then), the sweeper does.
        NotificationDelivery.objects.update(
            next_attempt_at=F("next_attempt_at")
            - timedelta(seconds=django_settings.NOTIFICATION_SWEEP_INTERVAL_SECONDS))
        assert deliveries_sweep() == 1
        delivery.refresh_from_db()
        assert delivery.status == Status.DELIVERED and len(http_sink.requests) == 1


def _create_in_process_with_dead_broker(properties: dict) -> subprocess.CompletedProcess:
    db = connection.settings_dict
    credentials = f"{db['USER']}:{db['PASSWORD']}" if db["PASSWORD"] else db["USER"]
    database_url = (f"postgres://{credentials}@{db['HOST'] or '127.0.0.1'}:"
                    f"{db['PORT'] or 5432}/{db['NAME']}")
    script = textwrap.dedent(f"""
        import uuid
        import django
        django.setup()
        from django.db import transaction
        from notifications.outbox import Notification, deliveries_create
        with transaction.atomic():
            deliveries_create([Notification(uuid.uuid4(), "HTTP", {properties!r}, {BODY!r},
                                            None)])
    """)
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings",
           "DATABASE_URL": database_url,
           "CELERY_BROKER_URL": f"redis://127.0.0.1:{reserved_port()}/0"}
    return subprocess.run([sys.executable, "-c", script], cwd=PROJECT, env=env,
                          capture_output=True, text=True, timeout=60)


class DeliveriesCancelTests:
    def test_it_cancels_unfinished_deliveries_of_the_subscription_only(self):
        subscription_id = uuid.uuid4()
        pending = make_delivery(subscription_id=subscription_id)
        sending = make_delivery(subscription_id=subscription_id, status=Status.SENDING,
                                claimed_at=timezone.now())
        delivered = make_delivery(subscription_id=subscription_id, status=Status.DELIVERED)
        other = make_delivery()
        assert deliveries_cancel(subscription_ids=[subscription_id], reason="Unsubscribed") == 2
        statuses = dict(NotificationDelivery.objects.values_list("id", "status"))
        assert statuses == {pending.id: Status.CANCELLED, sending.id: Status.CANCELLED,
                            delivered.id: Status.DELIVERED, other.id: Status.PENDING}
        pending.refresh_from_db()
        assert pending.last_error == "Unsubscribed"


@pytest.mark.django_db(transaction=True)
class DeliveriesCancelInFlightTests:
    def test_it_keeps_an_in_flight_failure_from_reviving_a_cancelled_delivery(self, http_sink):
        http_sink.status, http_sink.delay = 503, 0.5
        delivery = make_delivery("HTTP", http_sink.properties())
        worker = Background(lambda: delivery_send(delivery.id))
        wait_for(lambda: http_sink.requests, what="the request to reach the sink")
        deliveries_cancel(subscription_ids=[delivery.subscription_id], reason="Unsubscribed")
        assert worker.outcome(30) == Status.CANCELLED
        delivery.refresh_from_db()
        assert (delivery.status, delivery.last_error) == (Status.CANCELLED, "Unsubscribed")
