"""`python -m config.keep_running -- COMMAND [ARG...]`: run COMMAND, and start it again whenever
it ends on its own with a failure. `make worker-main`, `make worker-http` and `make beat` (so
the Procfile's `worker` and `beat`) run their Celery process under it: a worker can die of an
error raised while its broker connection is lost (docs/decisions.md, "Celery processes restart
themselves"), and then nothing sends pushes until someone restarts it.

- A failure (a status other than 0, or a signal it was not sent by us) restarts the command
  after 1 s, doubling up to 30 s while it keeps failing within a minute of its start.
- SIGTERM, SIGINT and SIGHUP are passed on once to the command, which runs in a session of
  its own (so a Ctrl-C reaches it once, through us: a second Ctrl-C is Celery's cold
  shutdown); when it has ended, so do we, with its status. The handler takes no lock: it can
  run again inside itself (honcho's SIGTERM to the group and GNU make's, which passes a
  SIGTERM on to its jobs, arrive together). It used to set a `threading.Event`, and hung for
  good when the second signal came while the first held the event's lock: the command never
  heard of either, and stopped only when honcho killed us (its parent-death signal).
- The command dies with us (parent-death signal SIGTERM on Linux) if we are killed outright.
"""
import ctypes
import ctypes.util
import signal
import subprocess
import sys
import time

FIRST_DELAY_SECONDS = 1.0
MAX_DELAY_SECONDS = 30.0
# A command that ran this long before failing starts again after the first delay.
STABLE_SECONDS = 60.0
# How often the wait before a restart looks whether we were told to stop.
STOP_CHECK_SECONDS = 0.1

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # in the child, before exec
    libc = ctypes.util.find_library("c")
    if libc and sys.platform.startswith("linux"):
        ctypes.CDLL(libc, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _status(returncode: int) -> int:
    return returncode if returncode >= 0 else 128 - returncode


def keep_running(command: list[str]) -> int:
    """Run `command` until it succeeds or we are told to stop; its last exit status."""
    stopping = False  # a plain flag: see the module's docstring
    child: subprocess.Popen | None = None

    def pass_on(number: int, frame: object) -> None:
        nonlocal stopping
        stopping = True
        # poll() and send_signal() never wait for Popen's lock (our child.wait() holds it).
        if child is not None and child.poll() is None:
            child.send_signal(number)

    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(number, pass_on)
    delay = FIRST_DELAY_SECONDS
    while True:
        started = time.monotonic()
        child = subprocess.Popen(command, start_new_session=True, preexec_fn=_die_with_parent)
        if stopping:  # told to stop while it was being started
            child.send_signal(signal.SIGTERM)
        returncode = child.wait()
        if stopping or returncode == 0:
            return _status(returncode)
        if time.monotonic() - started >= STABLE_SECONDS:
            delay = FIRST_DELAY_SECONDS
        print(f"keep_running: {command[0]} ended with status {_status(returncode)}; starting "
              f"it again in {delay:g} s", file=sys.stderr, flush=True)
        restart_at = time.monotonic() + delay
        while not stopping and time.monotonic() < restart_at:
            time.sleep(STOP_CHECK_SECONDS)
        if stopping:
            return _status(returncode)
        delay = min(delay * 2, MAX_DELAY_SECONDS)


def main(argv: list[str]) -> int:
    if "--" not in argv or not argv[argv.index("--") + 1:]:
        print("usage: python -m config.keep_running -- COMMAND [ARG...]", file=sys.stderr)
        return 2
    return keep_running(argv[argv.index("--") + 1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
