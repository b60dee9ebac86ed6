"""nginx in front of gunicorn (issue 31, item 5; docs/deployment.md): config/gunicorn.py binds
gunicorn to a Unix socket in var/nginx-<PORT>/ and runs nginx, configured from the Django
settings by rendering deploy/nginx.conf, on HOST:PORT. nginx reads each request whole (slow
clients hold no gunicorn thread), within SERVER_HEADER_TIMEOUT_SECONDS and
SERVER_BODY_TIMEOUT_SECONDS, refuses what is malformed or too large in the error envelope,
terminates TLS and passes the verified client certificate on (identity/certificates.py)."""
import os
import pwd
import shutil
import signal
import socket
import subprocess
import threading
from pathlib import Path

from django.conf import settings

TEMPLATE = Path(__file__).resolve().parent.parent / "deploy" / "nginx.conf"


def folder() -> Path:
    """nginx's prefix: its configuration, pid file, buffered bodies and gunicorn's socket."""
    return Path(settings.VAR_DIR) / f"nginx-{settings.PORT}"


def socket_path() -> Path:
    return folder() / "gunicorn.sock"


def nginx_binary() -> str | None:
    return shutil.which("nginx", path=f"{os.environ.get('PATH', '')}:/usr/local/sbin:/usr/sbin")


def render() -> Path:
    """Write nginx's configuration from the settings; returns its path."""
    host = f"[{settings.HOST}]" if ":" in settings.HOST else settings.HOST
    tls = ""
    if settings.TLS_CERT_FILE:
        tls = (f"ssl_certificate {settings.TLS_CERT_FILE}; "
               f"ssl_certificate_key {settings.TLS_KEY_FILE};")
        if settings.TLS_CA_FILE:  # asked for, verified; a client without one still gets HTTP
            tls += (f" ssl_client_certificate {settings.TLS_CA_FILE}; "
                    "ssl_verify_client optional; ssl_verify_depth 4;")
    where = folder()
    where.mkdir(parents=True, exist_ok=True)
    values = {
        # As root, nginx's workers run as the owner of var/ (they read gunicorn's socket).
        "USER": f"user {pwd.getpwuid(where.stat().st_uid).pw_name};" if os.geteuid() == 0
        else "",
        "MAX_CONNECTIONS": settings.SERVER_MAX_CONNECTIONS,
        "SOCKET": socket_path(),
        "LISTEN": f"{host}:{settings.PORT}" + (" ssl" if tls else ""),
        "TLS": tls,
        "HEADER_TIMEOUT": f"{settings.SERVER_HEADER_TIMEOUT_SECONDS:g}",
        "BODY_TIMEOUT": f"{settings.SERVER_BODY_TIMEOUT_SECONDS:g}",
        "KEEPALIVE": settings.SERVER_KEEPALIVE_SECONDS,
        "HEADER_BUFFER": max(settings.SERVER_LIMIT_REQUEST_LINE,
                             settings.SERVER_LIMIT_REQUEST_FIELD_SIZE),
        "MAX_BODY": settings.MAX_REQUEST_BODY_BYTES,
        # Behind a TLS_PROXY, its header says how the client came; else nginx's own scheme.
        "FORWARDED_PROTO": "$http_x_forwarded_proto" if settings.TLS_PROXY else "$scheme",
    }
    text = TEMPLATE.read_text()
    for name, value in values.items():
        text = text.replace(f"@{name}@", str(value))
    path = where / "nginx.conf"
    path.write_text(text)
    return path


def command(*extra: str) -> list[str]:
    return [nginx_binary() or "nginx", "-p", str(folder()), "-c", "nginx.conf", "-e", "stderr",
            *extra]


def check() -> str | None:
    """Render and test the configuration; the reason nginx cannot run, or None. HOST:PORT is
    tried first: another server there (a second `make run`) keeps its nginx configuration and
    gunicorn's socket, both named by the port."""
    if nginx_binary() is None:
        return ("Refusing to start: nginx is not installed (apt-get install nginx-light; "
                "docs/deployment.md)")
    if taken := address_taken():
        return taken
    render()
    result = subprocess.run(command("-t"), capture_output=True, text=True)
    return None if result.returncode == 0 else f"Refusing to start: nginx: {result.stderr}"


def address_taken() -> str | None:
    """Why HOST:PORT cannot be listened on (another server has it, no such address here), or
    None. Bound as nginx binds it, with SO_REUSEADDR, so that connections of a server that just
    stopped do not count."""
    shown = f"[{settings.HOST}]:{settings.PORT}" if ":" in settings.HOST else \
        f"{settings.HOST}:{settings.PORT}"
    try:
        family = socket.getaddrinfo(settings.HOST, settings.PORT, type=socket.SOCK_STREAM)[0][0]
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((settings.HOST, settings.PORT))
    except OSError as error:
        reason = getattr(error, "strerror", None) or error
        return (f"Refusing to start: cannot listen on {shown} ({reason}): another server "
                "(a `make run` already running?) has it, or HOST is not an address of this "
                "machine; stop it or set PORT")
    return None


class Front:
    """The running nginx; when it ends on its own, `on_exit` is called (the master stops). It
    runs in a process group of its own, so that the terminal's Ctrl-C reaches the master only,
    which stops it gracefully. (Its exit status says nothing: gunicorn's master reaps any
    child, nginx too, before this process's wait may.)"""

    def __init__(self, on_exit) -> None:
        self._stopping = False
        self._process = subprocess.Popen(command(), process_group=0)
        threading.Thread(target=self._watch, args=(on_exit,), daemon=True).start()

    def _watch(self, on_exit) -> None:
        self._process.wait()
        if not self._stopping:
            self._group_kill()  # workers the master left behind would keep the port
            on_exit()

    def _group_kill(self) -> None:
        try:
            os.killpg(self._process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def stop(self) -> None:
        """Stop nginx gracefully (answers in progress are finished)."""
        self._stopping = True
        try:
            self._process.send_signal(signal.SIGQUIT)
            self._process.wait(timeout=settings.SERVER_GRACEFUL_TIMEOUT_SECONDS)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            self._group_kill()
