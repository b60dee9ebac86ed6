"""A text progress bar for the import commands (written to stderr, one line, redrawn)."""
from collections.abc import Callable

from django.core.management.base import OutputWrapper

WIDTH = 30


def progress_bar(stream: OutputWrapper, label: str) -> Callable[[int, int], None]:
    def show(done: int, total: int) -> None:
        filled = WIDTH * done // total if total else WIDTH
        stream.write(f"\r{label} [{'#' * filled}{'.' * (WIDTH - filled)}] {done}/{total}",
                     ending="\n" if done >= total else "")  # the line ends when the bar is full
        stream.flush()

    return show
