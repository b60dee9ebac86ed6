"""A text progress bar for the import commands (written to stderr, one line, redrawn)."""
from collections.abc import Callable

from django.core.management.base import OutputWrapper

WIDTH = 30


def progress_bar(stream: OutputWrapper, label: str, total: int) -> Callable[[int], None]:
    def show(done: int) -> None:
        filled = WIDTH * done // total if total else WIDTH
        stream.write(f"\r{label} [{'#' * filled}{'.' * (WIDTH - filled)}] {done}/{total}",
                     ending="")
        stream.flush()

    return show
