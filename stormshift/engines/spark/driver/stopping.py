"""Ctrl-C and SIGTERM during a Spark run, as requests the driver polls.

Raising ``KeyboardInterrupt`` in the driver's main thread can land inside a py4j call
(waiting on the query), which leaves the gateway connection mid-answer. While the
query runs, ``StopRequests`` takes SIGINT and SIGTERM over and only counts them: the
driver's wait loop sees the first and stops cleanly (the batch in flight commits);
a second one, seen while that stop waits, abandons the batch in flight. Outside the
``with`` block (and off the main thread) signals keep their previous handlers.
``stop_query`` is that stop; ``interrupted_text`` the summary's line about it.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any, Self

from stormshift.engines.spark.records.runrecords import clear_stop, request_stop
from stormshift.state.client import Redis

__all__ = ["StopRequests", "interrupted_text", "stop_query"]

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


def stop_query(query: Any, runner: Any, r: Redis, namespace: str, stops: StopRequests, *,
               clean: bool, timeout_secs: float, poll_secs: float,
               trigger_active: Callable[[Any], bool]) -> bool:
    """Stop the query between batches: sources plan no new batch (the stop flag, ``engines/spark/records/runrecords.py``), the
    batch in flight commits, then ``query.stop()`` finds the stream thread idle (a stop
    in the middle of planning made the JVM print a stack overflow). A second Ctrl-C or
    SIGTERM while waiting, or ``timeout_secs``, abandons the batch in flight instead
    (uncommitted: the next run replays it). Returns whether a batch was abandoned."""
    if not query.isActive:
        return False
    if not clean:
        query.stop()
        return False
    request_stop(r, namespace)
    abandoned = False
    try:
        deadline = time.perf_counter() + timeout_secs
        seen = stops.count
        try:
            while query.isActive and time.perf_counter() < deadline:
                if not runner.busy and not trigger_active(query):
                    break
                if stops.count > seen:
                    break  # Ctrl-C / SIGTERM while the stop waits: abandon the batch
                time.sleep(poll_secs / 2)
        except KeyboardInterrupt:
            pass  # off the main thread: Ctrl-C while stopping abandons too
        if runner.busy:
            before = runner.commit_log.committed()
            query.stop()  # cancels the batch's jobs; its foreachBatch call then returns
            _wait_idle(runner, time.perf_counter() + 30, poll_secs)
            abandoned = runner.commit_log.committed() == before
        else:
            query.stop()
    finally:
        clear_stop(r, namespace)
    return abandoned


def _wait_idle(runner: Any, deadline: float, poll_secs: float) -> None:
    while runner.busy and time.perf_counter() < deadline:
        time.sleep(poll_secs / 2)


def interrupted_text(in_flight: bool, abandoned: bool, committed: int) -> str:
    """What a Ctrl-C / SIGTERM did to the batch in flight (the accounting counts committed
    batches only, so it holds either way)."""
    if abandoned:
        return (f"interrupted: the batch in flight was abandoned uncommitted (state committed "
                f"at txid {committed}); the next run on this checkpoint replays its tuples")
    if in_flight:
        return (f"interrupted: the batch in flight committed (txid {committed}) before the "
                "stop; the next run on this checkpoint continues after it")
    return (f"interrupted between batches (state committed at txid {committed}); the next "
            "run on this checkpoint continues after it")
