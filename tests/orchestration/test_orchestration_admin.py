import pytest

from tests.orchestration.helpers import pull
from tests.factories import make_instances, make_rules
from tests.store.helpers import http_interface, instance_body

pytestmark = pytest.mark.django_db


class OrchestrationAdminTests:
    def test_it_lists_jobs_locks_and_tokens_read_only(self, admin_client, api):
        make_instances(instance_body("P", "svc", metadata={"allowExclusivity": 60},
                                     interfaces=[http_interface(policy="TIME_LIMITED_TOKEN_AUTH")]))
        make_rules(("CarConsumer1", "P|svc|1.0.0", 1))
        assert pull(api, {"exclusivityDuration": 30}).status_code == 200
        # Read-only, but deletable (docs/admin.md): no add, no edit, delete the only action.
        for model in ("orchestrationjob", "orchestrationlock", "authorizationtoken"):
            base = f"/admin/orchestration/{model}/"
            page = admin_client.get(base)
            assert page.status_code == 200
            [row] = page.context["cl"].result_list
            assert set(page.context["cl"].model_admin.get_actions(page.wsgi_request)) == {
                "delete_selected"}, model
            assert admin_client.get(f"{base}add/").status_code == 403
            stored = list(type(row).objects.values())
            change = f"{base}{row.pk}/change/"
            view = admin_client.get(change)
            assert view.status_code == 200 and not view.context["adminform"].form.fields, model
            assert b'name="_save"' not in view.content, model
            assert admin_client.post(change, {"status": "ERROR", "message": "edited",
                                              "owner": "Edited", "usage_left": 99}
                                     ).status_code == 403, model
            assert list(type(row).objects.values()) == stored, model
        token_page = admin_client.get(f"/admin/orchestration/authorizationtoken/"
                                      f"{page.context['cl'].result_list[0].pk}/change/")
        assert b"token_hash" not in token_page.content


JOBS = "/admin/orchestration/orchestrationjob/"


def listed_jobs(response) -> list[str]:
    assert response.status_code == 200
    return [str(job.pk) for job in response.context["cl"].result_list]


class OrchestrationJobAdminTests:
    @pytest.fixture
    def jobs(self):
        from orchestration.models import OrchestrationJob
        from tests.orchestration.history_helpers import make_job, make_push_job

        return [make_job(minute=0),
                make_job(minute=1, status=OrchestrationJob.Status.ERROR, requester="Consumer2",
                         target="Consumer2"),
                make_push_job(minute=2, requester="Owner1", target="Consumer2")]

    def test_it_lists_the_history_newest_first(self, admin_client, jobs):
        assert listed_jobs(admin_client.get(JOBS)) == [str(job.pk) for job in reversed(jobs)]

    def test_it_filters_by_status_type_and_system(self, admin_client, jobs):
        pull, error, push = (str(job.pk) for job in jobs)
        assert listed_jobs(admin_client.get(JOBS, {"status__exact": "ERROR"})) == [error]
        assert listed_jobs(admin_client.get(JOBS, {"type__exact": "PUSH"})) == [push]
        assert listed_jobs(admin_client.get(JOBS, {"system": "consumer-2"})) == [push, error]
        assert listed_jobs(admin_client.get(JOBS, {"system": "owner1"})) == [push]
        assert listed_jobs(admin_client.get(JOBS, {"requester": "Consumer2"})) == [error]
        assert listed_jobs(admin_client.get(JOBS, {"target": "consumer2"})) == [push, error]
        both = {"target": "Consumer2", "type__exact": "PULL"}
        assert listed_jobs(admin_client.get(JOBS, both)) == [error]

    def test_it_searches_subscription_ids(self, admin_client, jobs):
        push = jobs[2]
        response = admin_client.get(JOBS, {"q": str(push.subscription_id)})
        assert listed_jobs(response) == [str(push.pk)]
