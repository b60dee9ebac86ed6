"""Builders and request helpers for the rule store tests."""
from store.models import Rule
from store.services.rules import RuleDraft, rule_create_many
from tests.helpers import SYSOP

BASE = "/serviceorchestration/orchestration/mgmt/simple-store"
QUERY, CREATE = f"{BASE}/query", f"{BASE}/create"
MODIFY, REMOVE = f"{BASE}/modify-priorities", f"{BASE}/remove"


def make_rules(*specs: tuple[str, str, int], requester: str = "Sysop") -> list[Rule]:
    """Store rules given as (consumer, serviceInstanceId, priority) through the service."""
    return rule_create_many(drafts=[RuleDraft(*spec) for spec in specs], requester=requester,
                            limit=None)


def post(api, path: str, body, headers=SYSOP):
    return api.post(path, body, format="json", **headers)


def entry(consumer: str, instance_id: str, priority) -> dict:
    return {"consumer": consumer, "serviceInstanceId": instance_id, "priority": priority}
