"""Django admin of the deliveries: read-only list with filters, and "Retry now"."""
import pytest
from django.utils import timezone

from notifications.models import NotificationDelivery
from tests.endpoints import make_delivery

pytestmark = pytest.mark.django_db

Status = NotificationDelivery.Status
URL = "/admin/notifications/notificationdelivery/"


class DeliveryAdminTests:
    def test_it_lists_deliveries_read_only_with_filters_and_search(self, admin_client):
        failed = make_delivery(status=Status.FAILED, last_error="x" * 500)
        make_delivery("MQTT", {"topic": "t"})
        page = admin_client.get(URL)
        assert page.status_code == 200
        assert len(page.context["cl"].result_list) == 2
        assert "x" * 500 not in page.content.decode()
        for query in ({"status__exact": "FAILED"}, {"protocol__exact": "MQTT"}):
            assert len(admin_client.get(URL, query).context["cl"].result_list) == 1, query
        found = admin_client.get(URL, {"q": str(failed.subscription_id)[:13]})
        assert list(found.context["cl"].result_list) == [failed]
        assert admin_client.get(f"{URL}add/").status_code == 403
        change = f"{URL}{failed.pk}/change/"
        assert not admin_client.get(change).context["adminform"].form.fields
        stored = list(NotificationDelivery.objects.values())
        assert admin_client.post(change, {"status": "PENDING", "last_error": ""}
                                 ).status_code == 403
        assert list(NotificationDelivery.objects.values()) == stored

    def test_it_shows_the_consumer_and_where_it_goes(self, admin_client):
        mqtt = make_delivery("MQTT", {"topic": "plant/consumer-a"}, receiver="ConsumerA")
        make_delivery("HTTP", {"address": "10.0.0.7", "port": 8080, "method": "POST",
                               "path": "/hooks/b"}, receiver="ConsumerB")
        page = admin_client.get(URL)
        html = page.content.decode()
        for text in ("ConsumerA", "plant/consumer-a", "ConsumerB", "10.0.0.7:8080/hooks/b"):
            assert text in html, text
        found = admin_client.get(URL, {"q": "consumera"})
        assert list(found.context["cl"].result_list) == [mqtt]

    def test_it_retries_selected_undelivered_rows_now(self, admin_client, http_sink,
                                                       django_capture_on_commit_callbacks):
        properties = http_sink.properties()
        failed = make_delivery("HTTP", properties, status=Status.FAILED, attempts=3,
                               last_error="503")
        cancelled = make_delivery("HTTP", properties, status=Status.CANCELLED)
        delivered = make_delivery("HTTP", properties, status=Status.DELIVERED,
                                  delivered_at=timezone.now())
        selected = [str(row.id) for row in (failed, cancelled, delivered)]
        with django_capture_on_commit_callbacks(execute=True):
            response = admin_client.post(
                URL, {"action": "retry_now", "_selected_action": selected}, follow=True)
        assert response.status_code == 200
        assert "2 notification deliveries queued" in response.content.decode()
        statuses = dict(NotificationDelivery.objects.values_list("id", "status"))
        assert statuses == {failed.id: Status.DELIVERED, cancelled.id: Status.DELIVERED,
                            delivered.id: Status.DELIVERED}
        assert len(http_sink.requests) == 2
        failed.refresh_from_db()
        assert (failed.attempts, failed.last_error) == (4, "")
