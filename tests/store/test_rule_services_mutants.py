"""Rule writers meeting inside their transactions, for the mutation check's survivors of
store/services/rules.py (docs/testing.md, "Mutation check"): modify-priorities waits for a
create of the same rule set, and then refuses with the validation's answer for the state the
create left, as if it had come second. Ordered by events and waits for a database lock,
never by sleeping."""
import threading

import pytest
from django.db import connection, transaction
from rest_framework.test import APIClient

from conventions.instance_ids import parse_instance_id
from store.models import Rule
from store.services.rules import ValidRule, rules_store
from tests.concurrency import lock_waiters, wait_until
from tests.factories import make_rules
from tests.helpers import SYSOP
from tests.store.helpers import MODIFY

pytestmark = pytest.mark.django_db(transaction=True)

CONFLICT = ("Conflicting rules, the combination of the following fields should be unique: "
            "Consumer1, service definition: svc, priority: 2")


class ModifyWaitsForCreateTests:
    def test_a_modify_racing_a_create_gets_the_validation_answer_not_a_retry(self):
        """A create has inserted a rule at priority 2 and not committed yet; a modify moving
        another rule of the rule set to priority 2 must wait for the create (its rule set
        lock) and then refuse with the conflict the committed rule set shows, as a modify
        sent after the create would. Without the lock the modify only stops at the unique
        index, and answers "created concurrently; please retry" for a change that can never
        succeed."""
        (moved,) = make_rules(("Consumer1", "P1|svc|1.0.0", 1))
        inserted, release = threading.Event(), threading.Event()

        def create():
            try:
                with transaction.atomic():  # the create's transaction, held open
                    rules_store([ValidRule("Consumer1", parse_instance_id("P2|svc|1.0.0"), 2)],
                                requester="Sysop")
                    inserted.set()
                    release.wait(timeout=30)
            finally:
                connection.close()

        responses: list = []

        def modify():
            try:
                responses.append(APIClient().put(MODIFY, {str(moved.id): 2}, format="json",
                                                 **SYSOP))
            finally:
                connection.close()

        creator = threading.Thread(target=create)
        creator.start()
        modifier = None
        try:
            assert inserted.wait(timeout=30), "the create never inserted"
            modifier = threading.Thread(target=modify)
            modifier.start()
            assert wait_until(lambda: lock_waiters() > 0), "the modify never waited"
        finally:
            release.set()
            creator.join(timeout=30)
            if modifier is not None:
                modifier.join(timeout=30)
        assert responses[0].status_code == 400, responses[0].content
        assert responses[0].json()["errorMessage"] == CONFLICT
        assert sorted(Rule.objects.values_list("service_instance_id", "priority")) == [
            ("P1|svc|1.0.0", 1), ("P2|svc|1.0.0", 2)]
