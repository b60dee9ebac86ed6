import uuid

import pytest

from orchestration.models import OrchestrationJob
from tests.factories import grant, make_instances, make_rules
from tests.helpers import as_system, assert_error, assert_forbidden
from tests.orchestration.helpers import pull
from tests.orchestration.history_helpers import (
    HISTORY_QUERY,
    make_job,
    make_push_job,
    query_history,
)
from tests.store.helpers import instance_body

pytestmark = pytest.mark.django_db

ORIGIN = f"POST {HISTORY_QUERY}"
U1 = "11111111-1111-1111-1111-111111111111"
Status, Type = OrchestrationJob.Status, OrchestrationJob.Type


def ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [entry["id"] for entry in response.json()["entries"]]


def as_ids(*jobs: OrchestrationJob) -> list[str]:
    return [str(job.id) for job in jobs]


@pytest.fixture
def jobs() -> dict[str, OrchestrationJob]:
    """Six jobs, one minute apart, oldest first."""
    sub1, sub2 = uuid.uuid4(), uuid.uuid4()
    return {
        "pull": make_job(minute=0),
        "pull_error": make_job(minute=1, status=Status.ERROR, requester="Consumer2",
                               target="Consumer2", service_definition="serviceDef2",
                               message="ValueError: boom", result_count=0),
        "pull_any": make_job(minute=2, service_definition=None),
        "push": make_push_job(minute=3, subscription_id=sub1, requester="Owner1",
                              target="Consumer2"),
        "push_pending": make_push_job(minute=4, subscription_id=sub2, status=Status.PENDING,
                                      started_at=None, finished_at=None, message=""),
        "push_running": make_push_job(minute=5, subscription_id=sub1,
                                      status=Status.IN_PROGRESS, finished_at=None, message=""),
    }


class HistoryQueryApiTests:
    def test_it_lists_every_job_newest_first_without_a_body(self, api, jobs):
        # reference-simple §13.10 H1
        for body in (None, {}):
            response = query_history(api, body)
            assert ids(response) == as_ids(*reversed(list(jobs.values())))
            assert response.json()["count"] == 6
        null_body = api.post(HISTORY_QUERY, "null", content_type="application/json",
                             **as_system("Sysop"))
        assert null_body.json()["count"] == 6

    def test_it_answers_entries_in_the_reference_shape(self, api, jobs):
        push, pending, pull_any = jobs["push"], jobs["push_pending"], jobs["pull_any"]
        body = query_history(api, {"ids": [str(push.id), str(pending.id), str(pull_any.id)]})
        entries = {entry["id"]: entry for entry in body.json()["entries"]}
        assert entries[str(push.id)] == {
            "id": str(push.id), "status": "DONE", "type": "PUSH", "requesterSystem": "Owner1",
            "targetSystem": "Consumer2", "serviceDefinition": "serviceDef1",
            "subscriptionId": str(push.subscription_id), "message": "1 local result(s)",
            "createdAt": "2026-01-01T00:03:00Z", "startedAt": "2026-01-01T00:03:01Z",
            "finishedAt": "2026-01-01T00:03:02Z",
        }
        assert entries[str(pending.id)]["status"] == "PENDING"
        assert entries[str(pending.id)]["startedAt"] is None
        assert entries[str(pending.id)]["finishedAt"] is None
        assert entries[str(pull_any.id)]["serviceDefinition"] is None
        assert entries[str(pull_any.id)]["subscriptionId"] is None

    def test_it_shows_a_real_pull(self, api):
        make_instances(instance_body("TemperatureProvider", "temperatureInfo"))
        make_rules(("CarConsumer1", "TemperatureProvider|temperatureInfo|1.0.0", 1))
        assert pull(api, {"serviceRequirement": {"serviceDefinition": "temperatureInfo"}},
                    consumer="CarConsumer1").status_code == 200
        # reference-simple §13.2 P17
        response = query_history(api, {"type": "PULL", "serviceDefinitions": ["temperatureInfo"]})
        [entry] = response.json()["entries"]
        assert (entry["requesterSystem"], entry["targetSystem"], entry["status"],
                entry["message"]) == ("CarConsumer1", "CarConsumer1", "DONE", "1 local result(s)")
        assert entry["startedAt"] is not None and entry["finishedAt"] is not None

    def test_it_filters_by_ids_in_any_case(self, api, jobs):
        body = {"ids": [str(jobs["push"].id).upper(), f" {jobs['pull'].id} ", U1]}
        assert ids(query_history(api, body)) == as_ids(jobs["push"], jobs["pull"])

    def test_it_filters_by_trimmed_upper_cased_statuses_and_type(self, api, jobs):
        # reference-simple §13.10 H10
        response = query_history(api, {"statuses": ["done \n"], "type": "pull \n"})
        assert ids(response) == as_ids(jobs["pull_any"], jobs["pull"])
        statuses = {"statuses": ["Pending", "in_progress"]}
        assert ids(query_history(api, statuses)) == as_ids(jobs["push_running"],
                                                           jobs["push_pending"])
        assert ids(query_history(api, {"type": "Push"})) == as_ids(
            jobs["push_running"], jobs["push_pending"], jobs["push"])
        assert ids(query_history(api, {"statuses": ["ERROR"]})) == as_ids(jobs["pull_error"])

    def test_it_filters_by_normalized_systems_and_service_definitions(self, api, jobs):
        assert ids(query_history(api, {"requesterSystems": ["consumer-2", "owner_1"]})) == as_ids(
            jobs["push"], jobs["pull_error"])
        assert ids(query_history(api, {"targetSystems": ["consumer2"]})) == as_ids(
            jobs["push"], jobs["pull_error"])
        assert ids(query_history(api, {"targetSystems": ["Owner1"]})) == []
        assert ids(query_history(api, {"serviceDefinitions": ["service-def-2"]})) == as_ids(
            jobs["pull_error"])

    def test_it_filters_by_subscription_ids_without_ids(self, api, jobs):
        subscription = str(jobs["push"].subscription_id)
        assert ids(query_history(api, {"subscriptionIds": [subscription.upper()]})) == as_ids(
            jobs["push_running"], jobs["push"])
        assert query_history(api, {"subscriptionIds": [U1]}).json() == {"entries": [],
                                                                        "count": 0}

    def test_it_ands_the_filters(self, api, jobs):
        body = {"type": "PUSH", "statuses": ["DONE", "IN_PROGRESS"],
                "requesterSystems": ["Consumer1"], "targetSystems": ["Consumer1"],
                "serviceDefinitions": ["serviceDef1"],
                "subscriptionIds": [str(jobs["push"].subscription_id)]}
        assert ids(query_history(api, body)) == as_ids(jobs["push_running"])
        body["statuses"] = ["DONE"]
        assert query_history(api, body).json() == {"entries": [], "count": 0}

    def test_it_pages_and_counts_every_match(self, api, jobs):
        body = {"type": "PUSH", "pagination": {"page": 0, "size": 2}}
        response = query_history(api, body)
        assert ids(response) == as_ids(jobs["push_running"], jobs["push_pending"])
        assert response.json()["count"] == 3
        body["pagination"]["page"] = 1
        response = query_history(api, body)
        assert ids(response) == as_ids(jobs["push"])
        assert response.json()["count"] == 3
        body["pagination"]["page"] = 2
        assert query_history(api, body).json() == {"entries": [], "count": 3}

    def test_it_sorts_by_creation_ascending(self, api, jobs):
        # reference-simple §13.10 H11
        page = {"page": 0, "size": 10, "sortField": "createdAt", "direction": "ASC"}
        assert ids(query_history(api, {"pagination": page})) == as_ids(*jobs.values())

    @pytest.mark.parametrize("sort_field, column", [
        ("id", "id"), ("createdAt", "created_at"), ("startedAt", "started_at"),
        ("finishedAt", "finished_at")])
    @pytest.mark.parametrize("direction", ["ASC", "desc"])
    def test_it_sorts_by_every_allowed_field_in_both_directions(self, api, jobs, sort_field,
                                                                column, direction):
        sign = "-" if direction == "desc" else ""
        expected = [str(job.id) for job in
                    OrchestrationJob.objects.order_by(f"{sign}{column}", f"{sign}id")]
        page = {"sortField": sort_field, "direction": direction}
        assert ids(query_history(api, {"pagination": page})) == expected

    def test_it_puts_jobs_not_started_or_finished_first_when_descending(self, api, jobs):
        page = {"sortField": "finishedAt", "direction": "DESC"}
        first_two = ids(query_history(api, {"pagination": page}))[:2]
        assert set(first_two) == set(as_ids(jobs["push_pending"], jobs["push_running"]))
        page["direction"] = "ASC"
        assert set(ids(query_history(api, {"pagination": page}))[-2:]) == set(first_two)

    def test_it_breaks_creation_time_ties_by_id(self, api):
        same_time = [make_job(minute=7) for _ in range(5)]
        expected = sorted(as_ids(*same_time), reverse=True)
        assert ids(query_history(api)) == expected
        page = {"page": 1, "size": 2}
        assert ids(query_history(api, {"pagination": page})) == expected[2:4]

    @pytest.mark.parametrize("body, message", [
        # reference-simple §13.10 H2–H9
        ({"ids": ["invalid-uuid"]}, "Invalid UUID id"),
        ({"statuses": ["INVALID_STATUS"]}, "Invalid status: INVALID_STATUS"),
        ({"statuses": ["PENDING", None]}, "Status list contains empty element"),
        ({"type": "INVALID_TYPE"}, "Invalid type: INVALID_TYPE"),
        ({"requesterSystems": ["System1", None]}, "Requester system list contains empty element"),
        ({"targetSystems": ["System1", None]}, "Target system list contains empty element"),
        ({"serviceDefinitions": ["serviceDef1", None]},
         "Service definition list contains empty element"),
        ({"requesterSystems": ["inv@lid"]},
         "The specified system name does not match the naming convention: Inv@lid"),
        # the rest of each rule
        ({"ids": [U1, None]}, "UUID is missing"),
        ({"ids": [" \t"]}, "UUID is missing"),
        ({"ids": ["1-1-1-1-1"]}, "Invalid UUID id"),
        ({"subscriptionIds": ["invalid-uuid"]}, "Invalid UUID id"),
        ({"subscriptionIds": [U1, None]}, "UUID is missing"),
        ({"subscriptionIds": [""]}, "UUID is missing"),
        ({"statuses": [" "]}, "Status list contains empty element"),
        ({"statuses": ["done", " failed "]}, "Invalid status:  failed "),
        ({"type": ""}, "Invalid type: "),
        ({"type": " pul l"}, "Invalid type:  pul l"),
        ({"requesterSystems": ["\n"]}, "Requester system list contains empty element"),
        ({"targetSystems": ["inv@lid"]},
         "The specified system name does not match the naming convention: Inv@lid"),
        ({"serviceDefinitions": ["2nd"]},
         "The specified service definition name does not match the naming convention: 2nd"),
        # the reference's order
        ({"pagination": {"size": 10}, "ids": ["x"]},
         "If size parameter is defined then page parameter cannot be undefined"),
        ({"ids": ["x"], "statuses": [None]}, "Invalid UUID id"),
        ({"statuses": ["x"], "type": "x"}, "Invalid status: x"),
        ({"type": "x", "requesterSystems": [None]}, "Invalid type: x"),
        ({"requesterSystems": ["inv@lid"], "targetSystems": [None]},
         "Target system list contains empty element"),
        ({"serviceDefinitions": ["2nd"], "subscriptionIds": ["x"]}, "Invalid UUID id"),
        ({"pagination": {"page": 0, "size": 10, "sortField": "status"}},
         "Sort field is invalid. Only the following are allowed: [id, createdAt, startedAt, "
         "finishedAt]"),
        ({"pagination": {"page": 0, "size": 1001}}, "The page size cannot be larger than 1000"),
        # wrong JSON types
        ({"statuses": "DONE"}, 'statuses: Expected a list of items but got type "str".'),
        ({"type": ["PULL"]}, "type: Not a valid string."),
        ({"ids": [5]}, "ids[0]: Not a valid string."),
        ({"subscriptionIds": {"a": 1}},
         'subscriptionIds: Expected a list of items but got type "dict".'),
        ({"pagination": {"page": "0", "size": 10}},
         "pagination.page: A valid integer is required."),
        ([], "Invalid data. Expected a dictionary, but got list."),
        ("DONE", "Invalid data. Expected a dictionary, but got str."),
    ])
    def test_it_refuses_invalid_queries(self, api, body, message, settings):
        settings.MAX_PAGE_SIZE = 1000
        assert_error(query_history(api, body), 400, "INVALID_PARAMETER", message, ORIGIN)

    def test_it_bounds_the_id_lists_by_the_bulk_size(self, api, settings):
        settings.MAX_BULK_SIZE = 2
        for field in ("ids", "subscriptionIds"):
            response = query_history(api, {field: [U1, U1, U1]})
            assert_error(response, 400, "INVALID_PARAMETER",
                         f"{field}: Ensure this field has no more than 2 elements.", ORIGIN)
        assert query_history(api, {"ids": [U1, U1]}).status_code == 200

    def test_it_refuses_non_operators_under_sysop_only(self, api, settings, jobs):
        settings.MANAGEMENT_POLICY = "sysop-only"
        response = query_history(api, {}, headers=as_system("Consumer1"))
        assert_forbidden(response, ORIGIN)

    def test_it_needs_the_view_permission_under_the_permission_policy(self, api, settings):
        settings.MANAGEMENT_POLICY = "permission"
        assert query_history(api, {}, headers=as_system("Auditor")).status_code == 403
        grant("Auditor", "view_orchestrationjob")
        assert query_history(api, {}, headers=as_system("Auditor")).status_code == 200

    def test_it_reads_in_two_queries(self, api, jobs, django_assert_max_num_queries):
        for minute in range(10, 60):
            make_job(minute=minute)
        with django_assert_max_num_queries(2):
            response = query_history(api, {"pagination": {"page": 0, "size": 40}})
        assert len(response.json()["entries"]) == 40
        assert response.json()["count"] == 56

