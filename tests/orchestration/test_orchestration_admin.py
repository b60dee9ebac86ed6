import pytest

from tests.orchestration.helpers import pull
from tests.store.helpers import (
    http_interface,
    instance_body,
    make_instances,
    make_rules,
)

pytestmark = pytest.mark.django_db


class OrchestrationAdminTests:
    def test_it_lists_jobs_locks_and_tokens_read_only(self, admin_client, api):
        make_instances(instance_body("P", "svc", metadata={"allowExclusivity": 60},
                                     interfaces=[http_interface(policy="TIME_LIMITED_TOKEN_AUTH")]))
        make_rules(("CarConsumer1", "P|svc|1.0.0", 1))
        assert pull(api, {"exclusivityDuration": 30}).status_code == 200
        for model in ("orchestrationjob", "orchestrationlock", "authorizationtoken"):
            page = admin_client.get(f"/admin/orchestration/{model}/")
            assert page.status_code == 200
            assert len(page.context["cl"].result_list) == 1, model
            assert admin_client.get(f"/admin/orchestration/{model}/add/").status_code == 403
        token_page = admin_client.get(f"/admin/orchestration/authorizationtoken/"
                                      f"{page.context['cl'].result_list[0].pk}/change/")
        assert b"token_hash" not in token_page.content
