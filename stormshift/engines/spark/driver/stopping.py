"""Ctrl-C and SIGTERM during a Spark run, as requests the driver polls.

Raising ``KeyboardInterrupt`` in the driver's main thread can land inside a py4j call
(waiting on the query), which leaves the gateway connection mid-answer. While the
query runs, ``StopRequests`` takes SIGINT and SIGTERM over and only counts them: the
driver's wait loop sees the first and stops cleanly (the batch in flight commits);
a second one, seen while that stop waits, abandons the batch in flight. Outside the
``with`` block (and off the main thread) signals keep their previous handlers.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType, TracebackType
from typing import Any, Self

__all__ = ["StopRequests"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopRequests:
    """``count``: how many Ctrl-C / SIGTERM arrived inside the ``with`` block."""

    def __init__(self) -> None:
        self.count = 0
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> Self:
        if threading.current_thread() is threading.main_thread():
            for sig in _SIGNALS:
                self._previous[sig] = signal.signal(sig, self._on_signal)
        return self

    def _on_signal(self, _signum: int, _frame: FrameType | None) -> None:
        self.count += 1

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous.clear()
