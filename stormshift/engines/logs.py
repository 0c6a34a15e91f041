"""Components' own log lines (``self.logger``), where Storm users look for them.

Under Storm a component's log went to its worker's log file. Here both
engines hand each captured line to ``forward_logs``: a record of the Python
logger ``stormshift.component.<name>`` carrying the task (and, on Spark, the
batch's txid). ``ComponentLogs`` (set up by the command for one run) sends
those records to one file per topology, every line naming component and task,
and WARNING and above to the console too.

On Spark the lines travel from the task to the driver in the task's counters
record (``engines/spark/task/counters.py``), at most ``MAX_LINES_PER_TASK`` per
member and batch (the rest counted, with a line saying how many were dropped):
a re-run task replaces its record, so a retried batch logs once.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Self

from stormshift.display import visible

__all__ = ["LEVELS", "MAX_LINES_PER_TASK", "ComponentLogs", "forward_logs"]

ROOT = "stormshift.component"
MAX_LINES_PER_TASK = 2000
LEVELS = {
    "TRACE": 5,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "WARNING": logging.WARNING,
    "ERROR": logging.ERROR,
    "CRITICAL": logging.CRITICAL,
}


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
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
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


def level_of(name: str | None) -> int:
    """``info`` / ``WARN`` / ... -> a logging level (INFO when unset)."""
    return LEVELS.get(str(name or "INFO").upper(), logging.INFO)
