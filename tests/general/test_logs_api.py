import datetime as dt

import pytest
from django.utils import timezone

from general.models import LogEntry
from tests.factories import grant
from tests.general.helpers import LOGS, T0, make_entry, post_logs
from tests.helpers import SYSOP, as_system, assert_error, assert_forbidden, assert_unauthenticated

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("quiet_log_table")]

ORIGIN = f"POST {LOGS}"
INVALID_SEVERITY = ("Invalid severity is specified. Allowed values are: TRACE, DEBUG, INFO, "
                    "WARN, ERROR, FATAL, OFF")


def ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [entry["logId"] for entry in response.json()["entries"]]


def messages(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [entry["message"] for entry in response.json()["entries"]]


@pytest.fixture
def entries():
    """Five entries a minute apart, one per severity from DEBUG to FATAL, of three loggers."""
    specs = [("serviceorchestration.auth", "DEBUG"), ("notifications.services", "INFO"),
             ("serviceorchestration.errors", "WARN"), ("Notifications.Transports", "ERROR"),
             ("celery.worker", "FATAL")]
    return [make_entry(logger, severity, minutes=n, message=f"m{n}")
            for n, (logger, severity) in enumerate(specs)]


class LogsQueryApiTests:
    def test_it_lists_every_entry_newest_first_without_a_body(self, api, entries):
        # reference-simple §13.11 G7
        for response in (api.post(LOGS, **SYSOP), post_logs(api, None), post_logs(api, {})):
            assert messages(response) == ["m4", "m3", "m2", "m1", "m0"]
            assert response.json()["count"] == 5

    def test_it_answers_entries_in_the_reference_shape(self, api):
        entry = make_entry("serviceorchestration.errors", "ERROR", message="boom",
                           exception="Traceback (most recent call last): ...")
        body = post_logs(api, None).json()
        assert body == {"count": 1, "entries": [{
            "logId": str(entry.id), "entryDate": "2025-02-01T12:00:00Z",
            "logger": "serviceorchestration.errors", "severity": "ERROR", "message": "boom",
            "exception": "Traceback (most recent call last): ..."}]}

    def test_it_leaves_out_a_missing_exception_and_an_empty_message(self, api):
        make_entry(message="", exception=None)
        assert set(post_logs(api, None).json()["entries"][0]) == {
            "logId", "entryDate", "logger", "severity"}

    def test_it_filters_by_time_interval_inclusively(self, api, entries):
        body = {"from": "2025-02-01T12:01:00Z", "to": "2025-02-01T12:03:00Z"}
        assert messages(post_logs(api, body)) == ["m3", "m2", "m1"]
        assert messages(post_logs(api, {"from": "2025-02-01T12:03:00.000Z"})) == ["m4", "m3"]
        assert messages(post_logs(api, {"to": " 2025-02-01T12:00:59Z "})) == ["m0"]
        assert messages(post_logs(api, {"from": "", "to": "  "})) == [
            "m4", "m3", "m2", "m1", "m0"]

    def test_it_defaults_the_end_of_the_interval_to_now(self, api):
        make_entry(message="past", when=timezone.now() - dt.timedelta(seconds=5))
        make_entry(message="future", when=timezone.now() + dt.timedelta(hours=1))
        assert messages(post_logs(api, None)) == ["past"]

    @pytest.mark.parametrize("severity, expected", [
        ("DEBUG", ["m4", "m3", "m2", "m1", "m0"]), ("TRACE", ["m4", "m3", "m2", "m1", "m0"]),
        ("info", ["m4", "m3", "m2", "m1"]), ("Warn", ["m4", "m3", "m2"]),
        ("WARNING", ["m4", "m3", "m2"]), (" error ", ["m4", "m3"]), ("FATAL", ["m4"]),
        ("critical", ["m4"]), ("OFF", []), ("", ["m4", "m3", "m2", "m1", "m0"]),
    ])
    def test_it_filters_by_least_severity(self, api, entries, severity, expected):
        response = post_logs(api, {"severity": severity})
        assert messages(response) == expected
        assert response.json()["count"] == len(expected)

    def test_it_filters_by_part_of_the_logger_name_in_any_case(self, api, entries):
        assert messages(post_logs(api, {"logger": "NOTIFICATIONS"})) == ["m3", "m1"]
        assert messages(post_logs(api, {"logger": " orchestration.e "})) == ["m2"]
        assert messages(post_logs(api, {"logger": "%"})) == []  # no LIKE wildcards
        assert len(messages(post_logs(api, {"logger": ""}))) == 5

    def test_it_ands_the_filters(self, api, entries):
        body = {"logger": "notifications", "severity": "WARN", "to": "2025-02-01T12:10:00Z"}
        assert messages(post_logs(api, body)) == ["m3"]

    def test_it_pages_and_counts_every_match(self, api, entries):
        body = {"severity": "INFO", "pagination": {"page": 1, "size": 3}}
        response = post_logs(api, body)
        assert messages(response) == ["m1"]
        assert response.json()["count"] == 4
        body["pagination"]["page"] = 5
        assert post_logs(api, body).json() == {"entries": [], "count": 4}

    def test_it_normalizes_paging_as_the_java_page_service(self, api, entries):
        # a negative page is the first, a size below 1 is MAX_PAGE_SIZE (reference-simple §5)
        body = {"pagination": {"page": -2, "size": 2}}
        assert messages(post_logs(api, body)) == ["m4", "m3"]
        body = {"pagination": {"page": 0, "size": 0}}
        assert messages(post_logs(api, body)) == ["m4", "m3", "m2", "m1", "m0"]

    @pytest.mark.parametrize("sort_field, expected", [
        ("logId", ["m0", "m1", "m2", "m3", "m4"]),
        ("entryDate", ["m0", "m1", "m2", "m3", "m4"]),
        ("logger", None),  # in the database's collation
        ("logLevel", ["m0", "m1", "m2", "m3", "m4"]),  # by severity, not alphabetically
    ])
    def test_it_sorts_by_every_sort_field(self, api, entries, sort_field, expected):
        body = {"pagination": {"page": 0, "size": 10, "direction": "asc",
                               "sortField": sort_field}}
        if sort_field == "logger":
            expected = list(LogEntry.objects.order_by("logger", "id")
                            .values_list("message", flat=True))
            assert expected[-2:] == ["m0", "m2"]  # serviceorchestration.auth, ...errors
        assert messages(post_logs(api, body)) == expected
        body["pagination"]["direction"] = "DESC"
        assert messages(post_logs(api, body)) == expected[::-1]

    def test_it_breaks_ties_by_log_id(self, api):
        same_time = [make_entry(message=f"t{n}") for n in range(3)]
        assert ids(post_logs(api, None)) == [str(entry.id) for entry in same_time[::-1]]
        body = {"pagination": {"page": 0, "size": 3, "direction": "ASC"}}
        assert ids(post_logs(api, body)) == [str(entry.id) for entry in same_time]

    def test_it_refuses_a_non_iso_from(self, api):
        # reference-simple §13.11 G4
        assert_error(post_logs(api, {"from": "2025-02-01"}), 400, "INVALID_PARAMETER",
                     "Invalid date time in field: from. Please use a UTC date time in ISO-8601 "
                     "format", ORIGIN)

    @pytest.mark.parametrize("value", ["2025-02-01T00:00:00+01:00", "yesterday",
                                       "2025-02-30T00:00:00Z"])
    def test_it_refuses_a_non_utc_to(self, api, value):
        assert_error(post_logs(api, {"to": value}), 400, "INVALID_PARAMETER",
                     "Invalid date time in field: to. Please use a UTC date time in ISO-8601 "
                     "format", ORIGIN)

    def test_it_refuses_an_end_before_the_start(self, api):
        # reference-simple §13.11 G5
        body = {"from": "2025-02-02T00:00:00Z", "to": "2025-02-01T00:00:00Z"}
        assert_error(post_logs(api, body), 400, "INVALID_PARAMETER", "Invalid time interval",
                     ORIGIN)

    @pytest.mark.parametrize("severity", ["nope", "WARNINGS", "ınfo", "fatal!"])
    def test_it_refuses_an_unknown_severity_listing_the_allowed_ones(self, api, severity):
        # reference-simple §13.11 G6, with a readable list instead of the Java array reference
        assert_error(post_logs(api, {"severity": severity}), 400, "INVALID_PARAMETER",
                     INVALID_SEVERITY, ORIGIN)

    @pytest.mark.parametrize("pagination, message", [
        ({"size": 3}, "If size parameter is defined then page parameter cannot be undefined"),
        ({"page": 0}, "If page parameter is defined then size parameter cannot be undefined"),
        ({"page": 0, "size": 1001}, "The page size cannot be larger than 1000"),
        ({"direction": "up"}, "Direction is invalid. Only ASC or DESC are allowed"),
        ({"sortField": "severity"}, "Sort field is invalid. Only the following are allowed: "
                                    "[logId, entryDate, logger, logLevel]"),
    ])
    def test_it_refuses_invalid_paging(self, api, pagination, message):
        assert_error(post_logs(api, {"pagination": pagination}), 400, "INVALID_PARAMETER",
                     message, ORIGIN)

    def test_it_validates_paging_before_the_filters(self, api):
        body = {"pagination": {"size": 3}, "from": "nope", "severity": "nope"}
        assert post_logs(api, body).json()["errorMessage"].startswith("If size parameter")

    @pytest.mark.parametrize("body, message", [
        ({"from": 5}, "from: Not a valid string."),
        ({"severity": ["WARN"]}, "severity: Not a valid string."),
        ({"logger": {"a": 1}}, "logger: Not a valid string."),
        ([], "Invalid data. Expected a dictionary, but got list."),
    ])
    def test_it_refuses_wrong_json_types(self, api, body, message):
        response = post_logs(api, body)
        assert response.status_code == 400, response.content
        assert response.json()["errorMessage"] == message

    def test_it_refuses_a_system_without_management_permission(self, api, settings, entries):
        settings.MANAGEMENT_POLICY = "sysop-only"
        assert_forbidden(post_logs(api, None, headers=as_system("Manager")), ORIGIN)

    def test_it_lets_a_system_holding_the_view_permission_read(self, api, settings, entries):
        settings.MANAGEMENT_POLICY = "permission"
        grant("LogReader", "general.view_logentry")
        assert post_logs(api, None, headers=as_system("LogReader")).json()["count"] == 5
        assert post_logs(api, None, headers=as_system("Other")).status_code == 403

    def test_it_needs_an_identity(self, api):
        response = api.post(LOGS, {}, format="json")
        assert_unauthenticated(response, ORIGIN, "No authorization header has been provided")


class LogsQueryPerformanceTests:
    def test_it_filters_and_pages_in_sql(self, api, django_assert_max_num_queries):
        for n in range(30):
            make_entry(severity="ERROR" if n % 2 else "INFO", minutes=n, message=f"e{n}")
        body = {"severity": "ERROR", "from": (T0 + dt.timedelta(minutes=10)).isoformat()
                .replace("+00:00", "Z"), "pagination": {"page": 0, "size": 2}}
        with django_assert_max_num_queries(8) as queries:
            response = post_logs(api, body)
        assert messages(response) == ["e29", "e27"]
        assert response.json()["count"] == 10
        select = next(query["sql"] for query in queries.captured_queries
                      if "general_logentry" in query["sql"] and "LIMIT" in query["sql"])
        assert '"level" >= 40' in select and "LIMIT 2" in select
