"""Concurrent writers against the real PostgreSQL: the rule set locks make them wait for each
other (the unique constraint is only the net), and the loser gets the same 400 as if it had
come second. Threads are ordered by barriers, events and waits for a database lock, never by
sleeping."""
import itertools
import logging
import threading

import pytest
from django.db import transaction
from django.utils import timezone
from rest_framework.test import APIClient

from conventions.exceptions import InvalidParameter
from conventions.instance_ids import parse_instance_id
from store.models import Rule
from store.services.rules import ValidRule, rules_store
from tests.concurrency import (
    meet_before,
    run_in_two_threads,
    run_together,
    second_waits_for_lock,
)
from tests.factories import make_rules
from tests.helpers import SYSOP
from tests.store.helpers import CREATE, MODIFY, entry

pytestmark = pytest.mark.django_db(transaction=True)

STORED = ("There is already an existing entity with consumer name: Consumer1, "
          "service definition: svc, priority: 1")


def serially(priorities: dict, bodies) -> dict:
    """The priorities after applying `bodies` one after the other."""
    result = dict(priorities)
    for body in bodies:
        result.update(body)
    return result


def create_call(instance_id: str):
    return lambda: APIClient().post(CREATE, {"entries": [entry("Consumer1", instance_id, 1)]},
                                    format="json", **SYSOP)


class RuleConcurrencyTests:
    @pytest.mark.parametrize("round_", range(5))
    def test_it_lets_exactly_one_of_two_concurrent_creates_win(self, round_):
        responses = run_together(create_call("P1|svc|1.0.0"), create_call("P2|svc|1.0.0"))
        statuses = sorted(response.status_code for response in responses)
        assert statuses == [201, 400], [r.content for r in responses]
        loser = next(r for r in responses if r.status_code == 400)
        assert loser.json()["errorMessage"] == STORED
        assert Rule.objects.count() == 1

    def test_it_answers_400_when_the_winner_commits_while_the_loser_inserts(self):
        """The loser passed the duplicate check before the winner committed, so the unique
        index stops it; it must still get the 400, not a 500."""
        inserted, release = threading.Event(), threading.Event()

        def winner():
            with transaction.atomic():
                now = timezone.now()
                Rule.objects.create(consumer="Consumer1", service_definition="svc",
                                    service_instance_id="P1|svc|1.0.0", priority=1,
                                    created_by="Sysop", updated_by="Sysop",
                                    created_at=now, updated_at=now)
                inserted.set()
                release.wait(timeout=30)

        # the loser has passed the duplicate check and waits on the winner's index entry
        _, loser = second_waits_for_lock(winner, inserted, create_call("P2|svc|1.0.0"), release)
        assert loser.status_code == 400, loser.content
        assert loser.json()["errorMessage"] == STORED
        assert Rule.objects.count() == 1

    def test_it_keeps_priorities_unique_under_concurrent_swaps(self):
        r1, r2, r3 = make_rules(("C", "P1|svc|1.0.0", 1), ("C", "P2|svc|1.0.0", 2),
                                ("C", "P3|svc|1.0.0", 3))

        def modify(body):
            return lambda: APIClient().put(MODIFY, body, format="json", **SYSOP)

        bodies = [{r1.id: 2, r2.id: 1}, {r2.id: 3, r3.id: 2}, {r1.id: 3, r3.id: 1}]
        responses = run_together(*(modify({str(k): v for k, v in body.items()})
                                       for body in bodies))
        # The rule set lock serializes them: a refusal is the validation's answer for the
        # state the earlier ones left (not the unique index's "created concurrently"), and the
        # table is what applying the accepted ones one after the other gives.
        for response in responses:
            assert response.status_code in (200, 400), response.content
            if response.status_code == 400:
                assert response.json()["errorMessage"].startswith(
                    "Conflicting rules, the combination of the following fields should be "
                    "unique: C, service definition: svc, priority: "), response.content
        accepted = [body for body, r in zip(bodies, responses) if r.status_code == 200]
        assert accepted
        final = dict(Rule.objects.values_list("id", "priority"))
        assert final in [serially({r1.id: 1, r2.id: 2, r3.id: 3}, order)
                         for order in itertools.permutations(accepted)], final

    def test_it_does_not_lose_a_remove_that_waits_for_a_priority_change(self):
        """modify-priorities updates rules in place: a remove waiting on the same rule deletes
        it once the change commits (with delete and re-insert it would find nothing)."""
        from store.services.rules import _store_priorities

        r1, r2 = make_rules(("C", "P1|svc|1.0.0", 1), ("C", "P2|svc|1.0.0", 2))
        changed, release = threading.Event(), threading.Event()

        def modify():
            with transaction.atomic():
                rules = list(Rule.objects.select_for_update().order_by("priority"))
                rules[0].priority, rules[1].priority = 2, 1
                _store_priorities(rules)
                changed.set()
                release.wait(timeout=30)

        def remove():
            return APIClient().delete(
                f"/serviceorchestration/orchestration/mgmt/simple-store/remove?uuids={r1.id}",
                **SYSOP)

        # the remove waits for the modifier's row lock
        _, removed = second_waits_for_lock(modify, changed, remove, release)
        assert removed.status_code == 200
        assert list(Rule.objects.values_list("id", "priority")) == [(r2.id, 1)]


class RuleDeadlockTests:
    @pytest.mark.parametrize("locks", ["rule set locks", "retry alone"])
    def test_two_creates_of_the_same_keys_at_the_same_moment_do_not_deadlock(self, monkeypatch,
                                                                             caplog, locks):
        """The unique index of rule keys is deferrable, so PostgreSQL checks a multi-row
        INSERT's keys at the end of the statement: two inserts of the same keys running at
        the same time each waited for the other, "deadlock detected", a 500. Now a create
        takes its rule sets' locks first: the second waits, then finds the keys taken. With
        the locks switched off the deadlock happens, and the retry turns it into the same
        400."""
        caplog.set_level(logging.INFO, logger="database.transaction_retry")
        if locks == "retry alone":
            monkeypatch.setattr("store.services.rules.rule_sets_lock", lambda rule_sets: None)
        rules = [ValidRule("Consumer1", parse_instance_id(f"P{n}|svc|1.0.0"), n)
                 for n in range(1, 3001)]
        meet_before(monkeypatch, Rule.objects, "bulk_create", ("a", "b"))

        def create(order):
            rules_store(order, requester="Sysop", batch_size=len(order))
            return "created"

        outcomes = run_in_two_threads(create, (rules,), (rules[::-1],))
        assert list(outcomes.values()).count("created") == 1, outcomes
        (loser,) = (value for value in outcomes.values() if value != "created")
        assert isinstance(loser, InvalidParameter), outcomes
        assert loser.message.startswith("There is already an existing entity with consumer "
                                        "name: Consumer1, service definition: svc, priority:")
        assert Rule.objects.count() == len(rules)
        if locks == "rule set locks":  # the order did it, not the retry
            assert "retrying" not in caplog.text, caplog.text
        # Without the locks the two INSERTs deadlock when they overlap (then the retry gives
        # the same answer, as asserted above); on a loaded machine they may not overlap, so
        # whether a retry happened is not asserted (tests/database/test_transaction_retry.py).

