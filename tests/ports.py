"""Loopback ports for the servers the tests start and for addresses that nobody answers.

Probing for a free port (bind to port 0, read the port, close) and binding it again later is
a race: another process may take the port in between. `reserved_port()` instead keeps the
port bound, without listening, for the rest of the test run:

- while no server of the test runs on it, a connection to it is refused (an unreachable
  peer);
- no other process can bind it meanwhile, and the kernel gives it to nobody as an ephemeral
  port;
- a server that sets SO_REUSEADDR (gunicorn, Mosquitto, Python's socketserver and
  `socket.create_server`) binds it nevertheless, as often as the test stops and starts it
  again (a broker outage keeps its port).
"""
import socket

_reserved: list[socket.socket] = []


def port_holder() -> socket.socket:
    """A socket holding a loopback port as described above, until it is closed."""
    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    holder.bind(("127.0.0.1", 0))
    return holder


def reserved_port() -> int:
    """A loopback port held by this process for the rest of the run (see above)."""
    holder = port_holder()
    _reserved.append(holder)
    return holder.getsockname()[1]
