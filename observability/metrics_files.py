"""The files of METRICS_DIR (docs/metrics.md, "Several processes"): prometheus_client writes
one file per process and kind of metric, named `<kind>_<pid>.db`, and a scrape adds them all
up. The gunicorn master (config/gunicorn.py) tidies the directory when it starts."""
import logging
import os
from pathlib import Path

logger = logging.getLogger(__name__)


def metrics_files_prune(directory: str) -> int:
    """Remove the files of processes that no longer run (a previous run's), so that its counts
    start again from zero; returns how many. Files of running processes stay: a Celery worker
    or an MQTT interface process on this host keeps writing to its file while the web server
    restarts, and its counts would vanish with it."""
    removed = 0
    for path in Path(directory).glob("*.db"):
        pid = path.stem.rpartition("_")[2]
        if pid.isdigit() and not _running(int(pid)):
            path.unlink(missing_ok=True)
            removed += 1
    if removed:
        logger.info("Metrics: removed %d files of stopped processes from %s", removed, directory)
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True
