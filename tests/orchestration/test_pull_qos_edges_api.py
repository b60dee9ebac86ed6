"""Edges of the QoS requirement of pull that the mutation check (docs/testing.md) found
untested: the smallest and the longest latency bound accepted."""
import pytest

from tests.helpers import assert_error
from tests.orchestration.helpers import PULL, pull
from tests.pull_sources import reads_no_source

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("pull_source")]


class PullQosEdgesTests:
    @pytest.fixture(autouse=True)
    def qos_enabled(self, settings):
        settings.QOS_ENABLED = True

    def test_it_accepts_a_latency_bound_of_one_millisecond(self, api):
        response = pull(api, {"qosRequirements": {"maxLatencyMs": 1}})

        assert response.status_code == 200

    def test_it_accepts_a_latency_bound_of_eighteen_digits(self, api):
        response = pull(api, {"qosRequirements": {"maxLatencyMs": "9" * 18}})

        assert response.status_code == 200

    @reads_no_source
    def test_it_refuses_a_latency_bound_of_nineteen_digits(self, api):
        response = pull(api, {"qosRequirements": {"maxLatencyMs": "1" * 19}})

        assert_error(response, 400, "INVALID_PARAMETER",
                     "Invalid QoS requirement: maxLatencyMs should be a positive integer",
                     f"POST {PULL}")
