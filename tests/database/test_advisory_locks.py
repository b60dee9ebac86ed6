"""Advisory locks on names (database.advisory_locks) against the real PostgreSQL."""
import pytest
from django.db import connection, transaction

from database.advisory_locks import BUCKETS, advisory_key, advisory_locks

pytestmark = pytest.mark.django_db


def held_advisory_locks() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                       "AND pid = pg_backend_pid()")
        return cursor.fetchone()[0]


class AdvisoryLockTests:
    @pytest.mark.django_db(transaction=True)  # the locks end with a real transaction
    def test_a_bulk_writer_holds_at_most_one_lock_per_bucket(self):
        """A lock per name let a few thousand-entry writes exhaust PostgreSQL's shared lock
        table ("out of shared memory")."""
        names = [f"Consumer{n}\0svc" for n in range(1000)]
        with transaction.atomic():
            advisory_locks("rule-set", names)
            assert 0 < held_advisory_locks() <= BUCKETS
        assert held_advisory_locks() == 0  # transaction-scoped

    def test_kinds_of_names_have_keys_of_their_own(self):
        rule_keys = {advisory_key("rule-set", f"n{n}") for n in range(500)}
        instance_keys = {advisory_key("service-instance", f"n{n}") for n in range(500)}
        assert len(rule_keys) == len(instance_keys) == BUCKETS
        assert not rule_keys & instance_keys

    def test_the_same_name_always_has_the_same_key(self):
        assert advisory_key("subscription", "A|svc") == advisory_key("subscription", "A|svc")
