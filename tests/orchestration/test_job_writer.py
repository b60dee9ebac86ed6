"""Pull jobs written behind the answer (orchestration/history/job_writer.py): every pull is recorded,
outside a transaction by the process's writer thread, inside one at once."""
import threading

import pytest
from django.db import transaction

from orchestration.history import job_writer
from orchestration.history.job_counts import job_count
from orchestration.history.job_writer import job_writer_flush
from orchestration.models import OrchestrationJob
from tests.factories import make_rules
from tests.orchestration.helpers import instance_ids, pull

pytestmark = pytest.mark.django_db(transaction=True)

HISTORY = "/serviceorchestration/orchestration/mgmt/history/query"
BODY = {"serviceRequirement": {"serviceDefinition": "temperatureInfo"}}


@pytest.fixture
def rules():
    make_rules(("Car", "Thermo|temperatureInfo|1.0.0", 1),
               ("Car", "Other|temperatureInfo|1.0.0", 2))


class WriteBehindTests:
    def test_it_writes_the_job_of_an_answered_pull(self, api, rules):
        assert len(instance_ids(pull(api, BODY, "Car"))) == 2
        assert job_writer_flush()
        job = OrchestrationJob.objects.get()
        assert (job.type, job.status, job.requester, job.target, job.service_definition,
                job.result_count, job.message) == ("PULL", "DONE", "Car", "Car",
                                                   "temperatureInfo", 2, "2 local result(s)")
        assert job.created_at <= job.started_at <= job.finished_at
        assert job_count(statuses=["DONE"], type="PULL") == 1  # the count triggers saw it

    def test_the_history_shows_a_pull_as_soon_as_it_was_answered(self, api, rules):
        for _ in range(5):
            pull(api, BODY, "Car")
        answer = api.post(HISTORY, {"type": "PULL"}, format="json",
                          HTTP_AUTHORIZATION="Bearer SYSTEM//Sysop")
        assert answer.status_code == 200, answer.content
        assert answer.json()["count"] == 5

    def test_it_writes_at_once_inside_a_transaction(self, api, rules):
        with transaction.atomic():
            pull(api, BODY, "Car")
            assert OrchestrationJob.objects.count() == 1

    def test_it_writes_again_what_the_database_refused(self, api, rules, monkeypatch):
        refused = threading.Event()
        insert = job_writer._insert

        def failing_once(jobs):
            if not refused.is_set():
                refused.set()
                raise RuntimeError("database away")
            insert(jobs)

        monkeypatch.setattr(job_writer, "_insert", failing_once)
        monkeypatch.setattr(job_writer, "RETRY_SECONDS", 0.05)
        pull(api, BODY, "Car")
        assert job_writer_flush()
        assert refused.is_set() and OrchestrationJob.objects.count() == 1

    def test_a_pull_writes_its_own_job_when_too_many_wait(self, api, rules, monkeypatch):
        monkeypatch.setattr(job_writer, "MAX_PENDING", 0)
        pull(api, BODY, "Car")
        assert OrchestrationJob.objects.count() == 1  # no flush needed
