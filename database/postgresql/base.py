"""The PostgreSQL backend the service runs on (`ENGINE = "database.postgresql"`): Django's, with
one change, a kept connection's health check (CONN_HEALTH_CHECKS) that asks the socket
instead of the server.

A connection kept between requests (CONN_MAX_AGE) is dead after the server restarted, and the
first request to use it would fail. Django's check sends `SELECT 1` before that first use,
a round trip on every request, pull's included. A server that ends a session (restart,
shutdown, `pg_terminate_backend`) sends its reason and closes the socket; a connection idle
between requests has nothing else to read, except rare notices. So a socket with something to
read is taken as dead (a notice costs one reconnect), and one with nothing is used: one
`select()` with no wait. A peer that vanished without closing (a cut network) is not seen;
that request is a 503 and its connection is dropped after it (api/errors.py).
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
