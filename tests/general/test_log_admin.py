import pytest

from tests.general.helpers import make_entry

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("quiet_log_table")]
ADMIN = "/admin/general/logentry/"


class LogEntryAdminTests:
    def test_it_lists_entries_newest_first_read_only(self, admin_client):
        make_entry(message="older", minutes=0)
        make_entry(message="newer", minutes=1)
        page = admin_client.get(ADMIN)
        assert page.status_code == 200
        newer = page.context["cl"].result_list[0]
        assert [entry.message for entry in page.context["cl"].result_list] == ["newer", "older"]
        assert admin_client.get(f"{ADMIN}add/").status_code == 403
        change = f"{ADMIN}{newer.pk}/change/"
        assert not admin_client.get(change).context["adminform"].form.fields
        assert admin_client.post(change, {"message": "edited"}).status_code == 403
        newer.refresh_from_db()
        assert newer.message == "newer"

    def test_it_filters_by_severity_and_searches_logger_and_message(self, admin_client):
        make_entry("notifications.services", "ERROR", message="delivery failed")
        make_entry("serviceorchestration.auth", "WARN", message="unknown token")
        by_severity = admin_client.get(f"{ADMIN}?severity__exact=ERROR")
        assert [e.message for e in by_severity.context["cl"].result_list] == ["delivery failed"]
        by_logger = admin_client.get(f"{ADMIN}?q=auth")
        assert [e.message for e in by_logger.context["cl"].result_list] == ["unknown token"]
        by_message = admin_client.get(f"{ADMIN}?q=delivery")
        assert [e.logger for e in by_message.context["cl"].result_list] == [
            "notifications.services"]
