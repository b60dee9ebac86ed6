"""Request-controlled fan-out is bounded (issue 10 item 5): an oversized list, string or JSON
value in any request body is a 400 naming the field, answered before anything is written."""
import pytest

from orchestration.models import AuthorizationToken, OrchestrationJob
from tests.helpers import SYSOP
from tests.orchestration.helpers import pull
from tests.store.helpers import http_interface, instance_body, make_instances, make_rules

pytestmark = pytest.mark.django_db

TIMED = "Timed|meter|1.0.0"


@pytest.fixture
def token_protected():
    """A token-protected interface that declares no operations, so that it offers every
    requested one: each requested operation costs a token."""
    interface = http_interface(policy="TIME_LIMITED_TOKEN_AUTH")
    del interface["properties"]["operations"]
    make_instances(instance_body("Timed", "meter", interfaces=[interface]))
    make_rules(("CarConsumer1", TIMED, 1))


def operations(count: int) -> dict:
    return {"serviceRequirement": {"operations": [f"op-{i}" for i in range(count)]}}


class PullOperationLimitTests:
    def test_it_refuses_thousands_of_operations_before_issuing_any_token(self, api,
                                                                         token_protected):
        tokens, jobs = AuthorizationToken.objects.count(), OrchestrationJob.objects.count()
        response = pull(api, operations(5000))
        assert response.status_code == 400, response.content[:200]
        body = response.json()
        assert body["exceptionType"] == "INVALID_PARAMETER"
        assert body["errorMessage"].startswith("serviceRequirement.operations: ")
        assert AuthorizationToken.objects.count() == tokens
        assert OrchestrationJob.objects.count() == jobs

    def test_it_issues_tokens_for_operations_up_to_the_limit(self, api, token_protected,
                                                             settings):
        response = pull(api, operations(settings.MAX_PULL_OPERATIONS))
        assert response.status_code == 200, response.content[:200]
        [result] = response.json()["results"]
        issued = result["authorizationTokens"]["TIME_LIMITED_TOKEN_AUTH"]
        assert len(issued) == settings.MAX_PULL_OPERATIONS
