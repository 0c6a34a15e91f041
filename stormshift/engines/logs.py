"""Components' own log lines (``self.logger``), where Storm users look for them.

Under Storm a component's log went to its worker's log file. Here both
engines hand each captured line to ``forward_logs``: a record of the Python
logger ``stormshift.component.<name>`` carrying the task (and, on Spark, the
batch's txid). ``ComponentLogs`` (set up by the command for one run) sends
those records to one file per topology, every line naming component and task,
and WARNING and above to the console too.

On Spark the lines travel from the task to the driver in the task's counters
record (``engines/spark/task/counters.py``), at most ``-o
stormshift.logs.max_lines_per_task`` (default ``MAX_LINES_PER_TASK``) per member
and batch: the rest are counted per component (``logs_dropped``), with a line
in the log file and a warning in the summary naming the option; a re-run task
replaces its record, so a retried batch logs once. The local engine has no cap.

The log file is its owner's only (0600, created so; an older one tightened), and
the directories it creates for it are 0700: components log what they handle,
which may be as private as the state (``private.py``). A directory that already
exists is the operator's and keeps its mode, except stormshift's own
``.stormshift/logs`` (``runner.default_log_file``), tightened to 0700.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Self

from stormshift.display import visible
from stormshift.errors import TopologyError
from stormshift.topology.overrides import LOG_LEVELS

__all__ = ["LEVELS", "LIMIT_KEY", "MAX_LINES_PER_TASK", "ComponentLogs", "dropped_warning",
           "forward_logs", "max_lines_per_task"]

ROOT = "stormshift.component"
MAX_LINES_PER_TASK = 2000
LIMIT_KEY = "stormshift.logs.max_lines_per_task"
LEVELS = LOG_LEVELS  # one table, kept where the config check (topology/) can see it


def max_lines_per_task(conf: Mapping[str, Any], component: str | None = None) -> int:
    """The per-task, per-batch cap on a component's forwarded log lines (module doc)."""
    raw = conf.get(LIMIT_KEY, MAX_LINES_PER_TASK)
    try:
        limit = int(raw)
        ok = limit >= 0 and not isinstance(raw, bool) and float(raw) == limit
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise TopologyError(f"{LIMIT_KEY} must be a whole number >= 0, got {raw!r}",
                            component=component, fix=f"e.g. -o {LIMIT_KEY}=10000")
    return limit


def dropped_warning(dropped: Mapping[str, int], limit: int) -> str:
    """The summary's warning for log lines past the cap, per component."""
    where = ", ".join(f"{name} {n:,}" for name, n in dropped.items())
    return (f"log lines dropped past {limit:,} per task per batch: {where}; keep them with "
            f"-o {LIMIT_KEY}=N (a larger N)")


def forward_logs(component: str, task: int, lines: Iterable[tuple[str, str]],
                 txid: int | None = None) -> None:
    """Emit captured ``(storm level, message)`` lines as records of the component's logger."""
    logger = logging.getLogger(f"{ROOT}.{component}")
    where = f"{component}[{task}]" if txid is None else f"{component}[{task}] txid {txid}"
    prefix = f"{ROOT}.{component} - "  # the default capture format's logger name: said once
    for level, message in lines:  # the message is data: no terminal control reaches a log
        logger.log(LEVELS.get(str(level).upper(), logging.INFO), "%s: %s", where,
                   visible(str(message).removeprefix(prefix)))  # (URL passwords masked too)


class _Console(logging.Handler):
    """WARNING and above to a callback (the command's console)."""

    def __init__(self, show: Callable[[str], None]):
        super().__init__(logging.WARNING)
        self.show = show

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.show(f"{record.levelname.lower()}: {record.getMessage()}")
        except Exception:  # noqa: BLE001 - logging.Handler convention
            self.handleError(record)


@dataclass
class ComponentLogs:
    """One run's log file and console handler; ``close()`` (or ``with``) removes them."""

    path: str
    level: int = logging.INFO
    console: Callable[[str], None] | None = None

    def __post_init__(self) -> None:
        _private_file(self.path)
        self._file = logging.FileHandler(self.path, encoding="utf-8")
        self._file.setLevel(self.level)
        self._file.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        root = logging.getLogger(ROOT)
        self._saved = (root.level, root.propagate)
        root.setLevel(min(self.level, logging.WARNING))
        root.propagate = False  # not also to the root logger's handlers (double lines)
        root.addHandler(self._file)
        self._console = _Console(self.console) if self.console is not None else None
        if self._console is not None:
            root.addHandler(self._console)

    def close(self) -> None:
        root = logging.getLogger(ROOT)
        root.removeHandler(self._file)
        if self._console is not None:
            root.removeHandler(self._console)
        root.setLevel(self._saved[0])
        root.propagate = self._saved[1]
        self._file.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _private_file(path: str) -> None:
    """``path`` exists, 0600, its missing directories created 0700 (module doc)."""
    from stormshift.private import make_private

    missing = []
    directory = os.path.dirname(os.path.abspath(path))
    while not os.path.isdir(directory):
        missing.append(directory)
        directory = os.path.dirname(directory)
    for created in reversed(missing):
        os.makedirs(created, mode=0o700, exist_ok=True)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
    make_private(path)  # one an older run left with the umask's mode


def level_of(name: str | None) -> int:
    """``info`` / ``WARN`` / ... -> a logging level (INFO when unset)."""
    return LEVELS.get(str(name or "INFO").upper(), logging.INFO)
