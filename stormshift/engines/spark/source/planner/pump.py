"""The planner's pump: a generic spout keeps emitting while Spark runs a batch.

Without it a spout's ``next_tuple`` runs only inside ``latestOffset`` (within
``budget_ms``), so the spout is idle while a batch executes and a batch gets
what one planning budget yields. The pump is one thread in the planner process
(``wal_planner.py``) that calls the spout tasks' ``next_tuple`` and appends their
emits to the write-ahead log, at most ``lead`` logged-but-unplanned tuples
ahead of the last planned offset per task; ``latestOffset`` then only reads
the logged heads. What a batch holds is still decided by the offsets alone.

Storm calls a spout from one thread: every call into a spout instance
(``next_tuple``, ``ack``, ``fail``, ``deactivate``) and every change of the
planner's per-task state holds ``SpoutLock``. The pump takes it one chunk at a
time and lets the planner's calls go first.

Call order: ``Pump(step).start()``; the planner calls ``wake()`` when it planned
(there is room again) and ``check()`` before planning (an error of the pump
thread -- Redis gone, a fenced append -- fails the planner's call, as it did
when ``next_tuple`` ran there); ``stop()`` before the spout is deactivated.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["DEFAULT_LEAD_BATCHES", "Pump", "SpoutLock"]

# stormshift.spout.lead_batches: batches' worth logged ahead per task. Off by default: on
# local[2] the pump thread takes CPU from the batch it overlaps and bought nothing end to
# end (bench/README.md, spout_throughput.py); it pays where the planner has a core of its
# own or the spout waits on I/O.
DEFAULT_LEAD_BATCHES = 0
FULL_WAIT_SECS = 0.05  # every task's lead full: wait for wake() at most this long
_YIELD_SECS = 0.0005


class SpoutLock:
    """One lock around every call into the spout's tasks; the planner's calls go first
    (the pump waits while the planner is waiting, so it cannot take the lock back at once)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._planner_waiting = threading.Event()

    @contextmanager
    def planner(self) -> Iterator[None]:
        self._planner_waiting.set()
        with self._lock:
            self._planner_waiting.clear()
            yield

    @contextmanager
    def pump(self) -> Iterator[None]:
        while self._planner_waiting.is_set():
            time.sleep(_YIELD_SECS)
        with self._lock:
            yield


class Pump:
    """A daemon thread calling ``step()`` until stopped: ``step`` logs one chunk per task
    with room and returns how long to wait before the next call (0: go on at once)."""

    def __init__(self, step: Callable[[], float], name: str):
        self.step = step
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def check(self) -> None:
        """Raise what stopped the pump thread, in the planner's thread."""
        if self.error is not None:
            raise self.error

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                wait = self.step()
                if wait > 0 and not self._stop.is_set():
                    self._wake.wait(wait)
                    self._wake.clear()
        except BaseException as exc:  # noqa: BLE001 - handed to the planner's thread (check)
            self.error = exc
