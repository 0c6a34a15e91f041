"""What a run's processes leave for each other in Redis beside the state (not state itself).

- the *stop flag*: set by the Spark driver while it stops its query; the
  sources' planners plan no new batch while it is set;
- the *ticks record*: which bolts get a tick in batch ``txid``, decided once by
  the driver (``engines/spark/driver/ticks.py``) so a re-run gets the same;
- a spout planner's *report*: its errors by kind (with a first traceback),
  warnings and log lines, taken by the driver after each batch
  (``engines/spark/source/spout_report.py`` says what they mean);
- a replayable source's *lag*: records behind its head per spout task after the
  batch its planner planned last (``spouts/lag.py``), read by the driver with
  each batch.

Key names: ``keys.py``. Nothing here is fenced: none of it is part of a
batch's exactly-once result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stormshift.engines.spark.records import keys as RK
from stormshift.state.client import Redis
from stormshift.state.connection import retrying

__all__ = ["SpoutReportRecord", "clear_source_lags", "clear_spout_reports", "clear_stop",
           "read_source_lags", "record_ticks", "recorded_ticks", "request_stop",
           "stop_requested", "write_source_lag"]

STOP_TTL_SECS = 3600
_PARTS = ("errors", "logs", "warnings", "dropped")


# -- the stop flag ----------------------------------------------------------------
@retrying
def request_stop(r: Redis, namespace: str) -> None:
    r.set(RK.stop_key(namespace), "1", ex=STOP_TTL_SECS)


@retrying
def clear_stop(r: Redis, namespace: str) -> None:
    r.delete(RK.stop_key(namespace))


@retrying
def stop_requested(r: Redis, namespace: str) -> bool:
    return bool(r.exists(RK.stop_key(namespace)))


# -- the ticks record ---------------------------------------------------------------
@retrying
def recorded_ticks(r: Redis, namespace: str, txid: int) -> bytes | None:
    """The record of batch ``txid`` (as ``record_ticks`` got it), or None."""
    return r.hget(RK.ticks_key(namespace), str(txid))


@retrying
def record_ticks(r: Redis, namespace: str, txid: int, record: str) -> None:
    r.hset(RK.ticks_key(namespace), str(txid), record)


# -- a replayable source's lag ------------------------------------------------------
@retrying
def write_source_lag(r: Redis, namespace: str, spout: str, record: str) -> None:
    r.hset(RK.source_lag_key(namespace), spout, record)


@retrying
def read_source_lags(r: Redis, namespace: str) -> dict[str, str]:
    """spout -> its last lag record (JSON), for every source that wrote one."""
    raw = r.hgetall(RK.source_lag_key(namespace))
    return {(k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes)
            else v) for k, v in raw.items()}


@retrying
def clear_source_lags(r: Redis, namespace: str) -> None:
    r.delete(RK.source_lag_key(namespace))


# -- a spout planner's report ---------------------------------------------------------
class SpoutReportRecord:
    """The report of one spout: ``errors`` (kind -> count, ``trace:kind`` -> traceback),
    ``warnings`` (a set), ``logs`` (a list, the newest ``keep_lines`` kept) and
    ``dropped`` (how many older lines the cap pushed out, so none is dropped silently)."""

    def __init__(self, r: Redis, namespace: str, spout: str):
        self.r = r
        self.errors_key = RK.spout_report_key(namespace, spout, "errors")
        self.logs_key = RK.spout_report_key(namespace, spout, "logs")
        self.warnings_key = RK.spout_report_key(namespace, spout, "warnings")
        self.dropped_key = RK.spout_report_key(namespace, spout, "dropped")

    def add_error(self, kind: str, trace: str) -> None:
        pipe = self.r.pipeline(transaction=False)
        pipe.hincrby(self.errors_key, kind, 1)
        pipe.hsetnx(self.errors_key, "trace:" + kind, trace)
        pipe.execute()

    def add_warning(self, text: str) -> None:
        self.r.sadd(self.warnings_key, text)

    def add_lines(self, lines: Sequence[str], keep_lines: int) -> int:
        """Append ``lines``, keep the newest ``keep_lines``; returns (and counts) those dropped."""
        pipe = self.r.pipeline(transaction=False)
        pipe.rpush(self.logs_key, *lines)
        if keep_lines > 0:
            pipe.ltrim(self.logs_key, -keep_lines, -1)
        else:  # LTRIM with -0 would keep everything
            pipe.delete(self.logs_key)
        length, _ = pipe.execute()
        dropped = max(int(length) - keep_lines, 0)
        if dropped:
            self.r.incrby(self.dropped_key, dropped)
        return dropped

    def take_lines(self) -> tuple[list[bytes], int]:
        """The log lines so far and how many were dropped before, both removed (one atomic
        round)."""
        pipe = self.r.pipeline(transaction=True)
        pipe.lrange(self.logs_key, 0, -1)
        pipe.get(self.dropped_key)
        pipe.delete(self.logs_key, self.dropped_key)
        lines, dropped, _ = pipe.execute()
        return list(lines), int(dropped or 0)

    def warnings(self) -> list[str]:
        return sorted(_text(w) for w in self.r.smembers(self.warnings_key))

    def errors(self) -> dict[str, bytes]:
        """Field -> value of the errors hash (counts and ``trace:`` fields)."""
        return {_text(k): v for k, v in self.r.hgetall(self.errors_key).items()}


def clear_spout_reports(r: Redis, namespace: str, spouts: Sequence[str]) -> None:
    if spouts:
        r.delete(*(RK.spout_report_key(namespace, s, p) for s in spouts for p in _PARTS))


def _text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw)
