"""Paging normalized as the Java PageService does (SPEC §1, reference-simple §5), through every
paged query: a negative page is the first page, a size below 1 is MAX_PAGE_SIZE. (The log query:
tests/general/test_logs_api.py, which keeps the log table quiet.)"""
import pytest

from tests.helpers import SYSOP, as_system
from tests.factories import make_instances, make_rules
from tests.store.helpers import I_QUERY, QUERY, instance_body
from tests.subscriptions.helpers import PUSH_QUERY, SUBSCRIPTION_QUERY, subscribe, subscription_body

pytestmark = pytest.mark.django_db

PULL = "/serviceorchestration/orchestration/pull"
PAGED_QUERIES = [
    pytest.param(QUERY, SYSOP, id="rule query"),
    pytest.param(I_QUERY, SYSOP, id="instance query"),
    pytest.param("/serviceorchestration/orchestration/mgmt/history/query", SYSOP, id="history"),
    pytest.param(PUSH_QUERY, SYSOP, id="push query"),
    pytest.param(SUBSCRIPTION_QUERY, as_system("Consumer1"), id="subscription query"),
]


def post(api, path, body, headers=SYSOP):
    response = api.post(path, body, format="json", **headers)
    assert response.status_code == 200, response.content
    return response.json()


@pytest.fixture
def rules():
    return make_rules(("Consumer1", "Provider1|serviceDef1|1.0.0", 1),
                      ("Consumer1", "Provider2|serviceDef1|1.0.0", 2),
                      ("Consumer1", "Provider3|serviceDef1|1.0.0", 3))


def priorities(body) -> list[int]:
    return [entry["priority"] for entry in body["entries"]]


class PagingNormalizationTests:
    def test_it_reads_a_negative_page_as_the_first(self, api, rules):
        paging = {"page": -1, "size": 2, "sortField": "priority", "direction": "ASC"}
        body = post(api, QUERY, {"pagination": paging})
        assert priorities(body) == [1, 2]
        assert body["count"] == 3

    def test_it_reads_a_size_below_1_as_the_maximum_page_size(self, api, settings, rules):
        for size in (0, -5):
            paging = {"page": 0, "size": size, "sortField": "priority", "direction": "ASC"}
            assert priorities(post(api, QUERY, {"pagination": paging})) == [1, 2, 3]
        settings.MAX_PAGE_SIZE = 2
        paging = {"page": 1, "size": 0, "sortField": "priority", "direction": "ASC"}
        assert priorities(post(api, QUERY, {"pagination": paging})) == [3]

    def test_it_still_refuses_a_size_over_the_maximum(self, api, rules):
        response = api.post(QUERY, {"pagination": {"page": -1, "size": 1001}}, format="json",
                            **SYSOP)
        assert response.status_code == 400
        assert response.json()["errorMessage"] == "The page size cannot be larger than 1000"

    @pytest.mark.parametrize("path, headers", PAGED_QUERIES)
    def test_it_normalizes_on_every_paged_query(self, api, path, headers, rules):
        make_instances(instance_body())
        api.post(PULL, {}, format="json", **as_system("Consumer1"))
        assert subscribe(api, subscription_body(), consumer="Consumer1").status_code == 201
        first_page = post(api, path, {"pagination": {"page": 0, "size": 1000}}, headers)
        normalized = post(api, path, {"pagination": {"page": -3, "size": 0}}, headers)
        assert normalized == first_page
        assert first_page["count"] > 0
