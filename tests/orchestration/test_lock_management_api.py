"""Lock management (issue 33): `serviceOrchestrationLockManagement` as the Java
DynamicServiceOrchestration serves it, over the reservations pull makes, in both strategies."""
import datetime as dt

import pytest
from django.utils import timezone

from orchestration.models import OrchestrationLock
from orchestration.pull.reservations import reserve
from tests.factories import make_instances, make_rules
from tests.helpers import SYSOP, as_system, assert_error
from tests.orchestration.helpers import instance_ids, pull
from tests.store.helpers import instance_body

pytestmark = pytest.mark.django_db

BASE = "/serviceorchestration/orchestration/mgmt/lock"
CREATE, QUERY = f"{BASE}/create", f"{BASE}/query"
ONE, TWO = "ProviderOne|temperatureInfo|1.0.0", "ProviderTwo|temperatureInfo|1.0.0"
LATER = "2099-01-01T00:00:00Z"


def lock(instance_id: str = ONE, owner: str = "Sysop", expires_at: str | None = LATER) -> dict:
    return {"serviceInstanceId": instance_id, "owner": owner, "expiresAt": expires_at}


def create(api, *locks, headers=SYSOP):
    return api.post(CREATE, {"locks": list(locks)}, format="json", **headers)


def stored() -> list[tuple]:
    return list(OrchestrationLock.objects.order_by("service_instance_id")
                .values_list("service_instance_id", "owner"))


class LockCreateTests:
    def test_it_locks_and_pull_offers_the_instance_to_the_owner_only(self, api):
        make_instances(instance_body("ProviderOne"), instance_body("ProviderTwo"))
        make_rules(("CarConsumer1", ONE, 1), ("CarConsumer1", TWO, 2), ("Plant", ONE, 1))
        response = create(api, lock(owner="plant"))
        assert response.status_code == 201, response.content
        [entry] = response.json()["entries"]
        assert {k: v for k, v in entry.items() if k != "id"} == {
            "orchestrationJobId": None, "serviceInstanceId": ONE, "owner": "Plant",
            "expiresAt": LATER, "temporary": False}
        assert instance_ids(pull(api, consumer="CarConsumer1")) == [TWO]
        assert instance_ids(pull(api, consumer="Plant")) == [ONE]

    @pytest.mark.parametrize("fields, message", [
        ({"serviceInstanceId": None}, "Service instance id is missing"),
        ({"owner": " "}, "Owner is missing"),
        ({"expiresAt": None}, "Expiration time is missing"),
        ({"expiresAt": "tomorrow"}, "Invalid expires at format: tomorrow"),
        ({"expiresAt": "2001-01-01T00:00:00Z"},
         "Expires at is in the past: 2001-01-01T00:00:00Z"),
        ({"serviceInstanceId": "nope"}, "The specified service instance identifier does not "
                                         "match the naming convention: nope"),
    ])
    def test_it_refuses_an_invalid_lock_and_writes_nothing(self, api, fields, message):
        response = create(api, lock(TWO), {**lock(), **fields})
        assert_error(response, 400, "INVALID_PARAMETER", message, f"POST {CREATE}")
        assert stored() == []

    def test_it_refuses_instances_held_by_a_live_lock_or_reservation(self, api):
        now = timezone.now()
        reserve(instance_id=ONE, owner="CarConsumer1", seconds=60, now=now)
        reserve(instance_id=TWO, owner="CarConsumer1", seconds=1,
                now=now - dt.timedelta(seconds=10))  # expired: replaced
        assert_error(create(api, lock(TWO), lock(ONE)), 400, "INVALID_PARAMETER",
                     f"Already locked: {ONE}", f"POST {CREATE}")
        assert create(api, lock(TWO)).status_code == 201
        assert stored() == [(ONE, "CarConsumer1"), (TWO, "Sysop")]

    def test_it_refuses_the_same_instance_twice(self, api):
        assert_error(create(api, lock(), lock(owner="Other")), 400, "INVALID_PARAMETER",
                     f"Duplicate service instance id: {ONE}", f"POST {CREATE}")

    def test_only_management_systems_lock(self, api):
        assert create(api, lock(), headers=as_system("CarConsumer1")).status_code == 403


class LockQueryAndRemoveTests:
    def test_it_lists_locks_and_reservations_newest_first(self, api):
        reserve(instance_id=ONE, owner="CarConsumer1", seconds=60, now=timezone.now())
        create(api, lock(TWO))
        answer = api.post(QUERY, {}, format="json", **SYSOP).json()
        assert answer["count"] == 2
        assert [e["serviceInstanceId"] for e in answer["entries"]] == [TWO, ONE]
        owners = api.post(QUERY, {"owners": ["CarConsumer1"]}, format="json", **SYSOP).json()
        assert [e["serviceInstanceId"] for e in owners["entries"]] == [ONE]
        before = api.post(QUERY, {"expiresBefore": "2098-01-01T00:00:00Z"}, format="json",
                          **SYSOP).json()
        assert [e["serviceInstanceId"] for e in before["entries"]] == [ONE]
        jobs = api.post(QUERY, {"orchestrationJobIds": ["x"]}, format="json", **SYSOP).json()
        assert jobs["count"] == 0

    def test_it_refuses_an_id_no_database_holds(self, api):
        response = api.post(QUERY, {"ids": [2**63]}, format="json", **SYSOP)
        assert response.status_code == 400, response.content

    def test_it_refuses_a_bad_instant(self, api):
        assert_error(api.post(QUERY, {"expiresAfter": "soon"}, format="json", **SYSOP), 400,
                     "INVALID_PARAMETER", "Invalid expires after: soon", f"POST {QUERY}")

    @pytest.mark.parametrize("path", [f"{BASE}/remove/Sysop",
                                      f"{BASE}/remove/%7Bowner%7D/Sysop"])
    def test_it_removes_the_owners_locks_only(self, api, path):
        create(api, lock(ONE), lock(TWO, owner="Other"))
        response = api.delete(f"{path}?instanceIds={ONE},{TWO}", **SYSOP)
        assert response.status_code == 200
        assert stored() == [(TWO, "Other")]

    def test_a_remove_needs_instance_ids(self, api):
        response = api.delete(f"{BASE}/remove/Sysop", **SYSOP)
        assert_error(response, 400, "INVALID_PARAMETER", "Service instance id list empty",
                     f"DELETE {BASE}/remove/Sysop")


class LockStrategyTests:
    def test_the_flexible_store_serves_lock_management_too(self, api, settings):
        settings.ORCHESTRATION_STRATEGY = "flexible-store"
        assert create(api, lock()).status_code == 201
