"""What import_rules and import_instances share: options, the plan printed, the confirmation
of removals, the progress bar. The work is their `transfer`'s (store.files)."""
import os
import sys
import time
from collections.abc import Callable

from django.core.management.base import BaseCommand, CommandError, CommandParser, OutputWrapper
from django.db import OperationalError

from conventions.exceptions import ArrowheadError
from store.file_entries import BadEntries
from store.files import Transfer
from store.services.imports import ImportPlan, ImportRefused

SHOWN = 50  # removals listed before a confirmation question
WIDTH = 30  # of the progress bar
# An import shares its machine with the service it writes to, whose pulls it must not slow
# (issue 34, goal 3). Unless --full-speed: the command runs at this CPU niceness, so the
# service's processes take the cores first, and after each chunk it writes it pauses as
# long as the chunk took (times PACE), so its database backend (whose priority it cannot
# lower) works at most half the time (docs/rule-store.md, "Importing on a live plant").
NICENESS = 10
PACE = 1.0


def progress_bar(stream: OutputWrapper, label: str) -> Callable[[int, int], None]:
    """A text progress bar (one line, redrawn)."""
    def show(done: int, total: int) -> None:
        filled = WIDTH * done // total if total else WIDTH
        stream.write(f"\r{label} [{'#' * filled}{'.' * (WIDTH - filled)}] {done}/{total}",
                     ending="\n" if done >= total else "")  # the line ends when the bar is full
        stream.flush()

    return show


def paced(progress: Callable[[int, int], None],
          pause: Callable[[float], None] = time.sleep,
          clock: Callable[[], float] = time.monotonic) -> Callable[[int, int], None]:
    """`progress`, and after each chunk but the first and the last a pause as long as the
    chunk took, times PACE (the first report ends a chunk whose start is unknown)."""
    last: list[float] = []

    def report(done: int, total: int) -> None:
        progress(done, total)
        if last and done < total:
            pause((clock() - last[0]) * PACE)
        last[:] = [clock()]

    return report


class ImportCommand(BaseCommand):
    transfer: Transfer
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
        """From the command line (its own process; `call_command` leaves the caller's
        priority alone): at NICENESS unless --full-speed."""
        if "--full-speed" not in argv and hasattr(os, "nice"):
            os.nice(NICENESS)
        super().run_from_argv(argv)

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
                self._confirm_removal(plan, options.get("stdin") or sys.stdin)
                confirmed = plan.digest  # apply what the operator saw, or nothing
            progress = progress_bar(self.stderr, f"Importing {self.noun}s")
            done = self.transfer.apply(
                entries, requester=options.get("requester"), replace=replace,
                update=options["update"], expected=confirmed,
                progress=progress if options["full_speed"] else paced(progress))
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
