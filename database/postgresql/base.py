"""The PostgreSQL backend the service runs on (`ENGINE = "database.postgresql"`): Django's, with
a kept connection's health check (CONN_HEALTH_CHECKS) that asks the socket instead of the server
(Django sends `SELECT 1`, a round trip on every request; docs/decisions.md, "Kept connections
are checked before a request uses them"). A server that ends a session sends its reason and
closes the socket, so an idle connection with something to read is taken as dead (a rare
notice costs one reconnect). A peer gone without closing (a cut network) is not seen; that
request is a 503 and its connection is dropped after it (api/errors.py).
"""
import select

from django.db.backends.postgresql import base


class DatabaseWrapper(base.DatabaseWrapper):
    def is_usable(self) -> bool:
        if self.connection is None or self.connection.closed:
            return False
        try:
            readable, _, _ = select.select([self.connection.fileno()], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable
