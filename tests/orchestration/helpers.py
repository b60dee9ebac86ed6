"""Request helpers for the pull tests."""
from tests.helpers import as_system

PULL = "/serviceorchestration/orchestration/pull"


def pull(api, body=None, consumer: str = "CarConsumer1"):
    if body is None:
        return api.post(PULL, **as_system(consumer))
    return api.post(PULL, body, format="json", **as_system(consumer))


def instance_ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [result["serviceInstanceId"] for result in response.json()["results"]]
