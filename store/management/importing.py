"""What import_rules and import_instances share: options, the plan printed, the confirmation
of removals, the progress bar, yielding to the service. The work is their `transfer`'s
(store.files)."""
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator

from django.core.management.base import BaseCommand, CommandError, CommandParser, OutputWrapper
from django.db import OperationalError

from conventions.exceptions import ArrowheadError
from store.file_entries import BadEntries
from store.files import Transfer
from store.services.imports import ImportPlan, ImportRefused

SHOWN = 50  # removals listed before a confirmation question
WIDTH = 30  # of the progress bar
# An import shares its machine with the service it writes to, whose pulls it must not slow
# (issue 34, goal 3). Unless --full-speed, from the command line: the command runs at this CPU
# niceness, and after each SLICE_SECONDS of work it pauses as long as it worked (times PACE),
# wherever it is: reading the file, checking it, waiting for its database backend (whose
# priority it cannot lower) to write. Either of the command and its backend then keeps a core
# busy at most half the time, in bursts of about SLICE_SECONDS (docs/rule-store.md,
# "Importing on a live plant").
NICENESS = 10
PACE = 1.0
SLICE_SECONDS = 0.1


def progress_bar(stream: OutputWrapper, label: str) -> Callable[[int, int], None]:
    """A text progress bar (one line, redrawn)."""
    def show(done: int, total: int) -> None:
        filled = WIDTH * done // total if total else WIDTH
        stream.write(f"\r{label} [{'#' * filled}{'.' * (WIDTH - filled)}] {done}/{total}",
                     ending="\n" if done >= total else "")  # the line ends when the bar is full
        stream.flush()

    return show


class Yielding:
    """While its block runs, a timer signal interrupts it after each `slice_seconds` of wall
    time, and the handler pauses as long as the block ran since the last pause, times `pace`.
    Python runs the handler between two steps of the main thread, so a long step of C code
    (parsing the file) is paused after it ends, for as long as it took. The main thread only
    (where signals are handled); elsewhere, and where there are no timer signals, it does
    nothing."""

    def __init__(self, pace: float = PACE, slice_seconds: float = SLICE_SECONDS,
                 pause: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.pace, self.slice_seconds, self.pause, self.clock = pace, slice_seconds, pause, clock
        self._previous = None
        self._on = (hasattr(signal, "setitimer")
                    and threading.current_thread() is threading.main_thread())

    def __enter__(self) -> "Yielding":
        if self._on:
            self._previous = signal.signal(signal.SIGALRM, self._rest)
            self._arm()
        return self

    def __exit__(self, *exc_info) -> None:
        if self._on:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._previous)

    @contextlib.contextmanager
    def suspended(self) -> Iterator[None]:
        """No pauses while the block runs, and its time is not work (an operator answering
        a question)."""
        if self._on:
            signal.setitimer(signal.ITIMER_REAL, 0)
        try:
            yield
        finally:
            if self._on:
                self._arm()

    def _arm(self) -> None:
        self._worked_since = self.clock()
        signal.setitimer(signal.ITIMER_REAL, self.slice_seconds)

    def _rest(self, signum, frame) -> None:
        self.pause((self.clock() - self._worked_since) * self.pace)
        self._arm()


class ImportCommand(BaseCommand):
    transfer: Transfer
    yielding: Yielding | None = None  # from the command line, unless --full-speed
    stealth_options = ("stdin",)  # tests answer the confirmation question through it

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")
        parser.add_argument("--dry-run", action="store_true",
                            help="print what would be created, updated and removed; write "
                                 "nothing")
        parser.add_argument("--update", action="store_true",
                            help=f"overwrite stored {self.noun}s that differ from the file's "
                                 "(without it such an import is refused)")
        parser.add_argument("--replace", action="store_true",
                            help=f"also remove the stored {self.noun}s the file does not hold "
                                 "(asks for confirmation)")
        parser.add_argument("--yes", action="store_true",
                            help="remove without asking (needed without a terminal)")
        parser.add_argument("--full-speed", action="store_true",
                            help="use the CPU and the database as fast as they allow (by "
                                 "default an import yields to the service's requests: it "
                                 "runs at a lower CPU priority and pauses between chunks)")

    def run_from_argv(self, argv: list[str]) -> None:
        self._from_command_line = True
        super().run_from_argv(argv)

    def execute(self, *args, **options) -> str | None:
        """From the command line (its own process; `call_command` leaves the caller's
        priority and pace alone): at NICENESS and `yielding`, unless --full-speed."""
        if not getattr(self, "_from_command_line", False) or options.get("full_speed"):
            return super().execute(*args, **options)
        if hasattr(os, "nice"):
            os.nice(NICENESS)
        with Yielding() as self.yielding:
            return super().execute(*args, **options)

    def handle(self, *args, **options) -> None:
        source, replace = options["file"], options["replace"]
        content = self._read(source)
        try:
            # A dry run lists the entries that differ as updates; an import refuses them.
            entries, plan = self.transfer.check(content, source, replace=replace,
                                                update=options["update"] or options["dry_run"])
            if options["dry_run"]:
                self._print_plan(plan, options["verbosity"])
                self.stdout.write("Dry run: nothing written.")
                return
            confirmed = None
            if plan.removed and not options["yes"]:
                with self.yielding.suspended() if self.yielding else contextlib.nullcontext():
                    self._confirm_removal(plan, options.get("stdin") or sys.stdin)
                confirmed = plan.digest  # apply what the operator saw, or nothing
            done = self.transfer.apply(
                entries, requester=options.get("requester"), replace=replace,
                update=options["update"], expected=confirmed,
                progress=progress_bar(self.stderr, f"Importing {self.noun}s"))
        except BadEntries as exc:
            for problem in exc.problems:  # every one, one a line
                self.stderr.write(problem)
            hint = (f" Run with --update to overwrite the {exc.differing} that differ "
                    "(--dry-run lists every change)." if exc.differing else "")
            raise CommandError(f"{exc.summary}.{hint}") from exc
        except ImportRefused as exc:  # entries changed by another writer since the check
            raise CommandError(f"{exc.message}. Run with --update to overwrite them "
                               "(--dry-run lists every change).") from exc
        except (ArrowheadError, OperationalError) as exc:  # refused, or a concurrent writer
            raise CommandError(getattr(exc, "message", f"Nothing imported: {exc}")) from exc
        self.stderr.write(f"Imported {len(entries)} {self.noun}(s): "
                          f"{len(done.created)} created, {len(done.updated)} updated, "
                          f"{len(done.unchanged)} unchanged, {len(done.removed)} removed.")

    @property
    def noun(self) -> str:
        return self.transfer.noun

    def _read(self, path: str) -> bytes:
        try:
            with open(path, "rb") as file:
                return file.read()
        except OSError as exc:
            raise CommandError(f"Cannot read {path}: {exc}") from exc

    def _print_plan(self, plan: ImportPlan, verbosity: int) -> None:
        sections = (("To create", plan.created, "+"), ("To update", plan.updated, "~"),
                    ("Unchanged", plan.unchanged, "="), ("To remove", plan.removed, "-"))
        for title, lines, mark in sections:
            self.stdout.write(f"{title}: {len(lines)} {self.noun}(s)")
            if mark != "=" or verbosity >= 2:  # unchanged entries only when asked (-v 2)
                for line in lines:
                    self.stdout.write(f"  {mark} {line}")

    def _confirm_removal(self, plan: ImportPlan, stdin) -> None:
        count = len(plan.removed)
        if not stdin.isatty():
            raise CommandError(f"--replace would remove {count} {self.noun}(s); without a "
                               "terminal to confirm, add --yes (--dry-run lists them). "
                               "Nothing imported.")
        self.stdout.write(f"--replace removes {count} {self.noun}(s) the file does not hold:")
        for line in plan.removed[:SHOWN]:
            self.stdout.write(f"  - {line}")
        if count > SHOWN:
            self.stdout.write(f"  … and {count - SHOWN} more (--dry-run lists them all)")
        self.stdout.write(f"Import ({plan.summary})? Type 'yes' to continue: ", ending="")
        self.stdout.flush()
        if stdin.readline().strip().lower() != "yes":
            raise CommandError("Not confirmed; nothing imported.")
