"""The Spark driver's watermark records: per batch, what it decided and what it folded.

- the *time record* of batch ``txid``: its processing time, each windowed bolt's
  watermark and whether it is the final batch. Written once (``HSETNX``: the first
  writer wins), so every re-run of the batch -- and a second driver racing the
  first -- reads the same record and fires the same panes;
- the *trackers record* as of batch ``txid``: each windowed bolt's per-partition
  max event time, last-seen processing time and watermark after that batch (a pure
  function of the record before it and the batch's committed task reports, so a
  re-run writes the same thing). The driver reads the newest one below the batch
  it plans; older ones are pruned.

The records' content is the driver's (``engines/spark/driver/windows.py``); key
names are ``keys.py``'s. Not fenced: both are functions of committed input.
"""

from __future__ import annotations

from typing import Any

from stormshift.engines.spark.records import keys as RK
from stormshift.state.client import Redis
from stormshift.state.connection import retrying

__all__ = ["record_time", "record_trackers", "recorded_time", "trackers_before"]


def _txids(raw: dict[Any, Any]) -> dict[int, Any]:
    return {int(k.decode() if isinstance(k, bytes) else k): v for k, v in raw.items()}


@retrying
def recorded_time(r: Redis, namespace: str, txid: int) -> bytes | None:
    return r.hget(RK.window_times_key(namespace), str(txid))


@retrying
def record_time(r: Redis, namespace: str, txid: int, record: str) -> bytes:
    """Record batch ``txid``'s time unless one is there; returns the one that is."""
    key = RK.window_times_key(namespace)
    pipe = r.pipeline(transaction=True)
    pipe.hsetnx(key, str(txid), record)
    pipe.hget(key, str(txid))
    return pipe.execute()[1]


@retrying
def trackers_before(r: Redis, namespace: str, txid: int) -> bytes | None:
    """The newest trackers record of a batch below ``txid``, or None."""
    older = {t: v for t, v in _txids(r.hgetall(RK.window_trackers_key(namespace))).items()
             if t < txid}
    return older[max(older)] if older else None


@retrying
def record_trackers(r: Redis, namespace: str, txid: int, record: str) -> None:
    """The trackers as of ``txid``; records of both kinds below ``txid - 1`` go (a re-run
    of ``txid`` needs the trackers of the batch before it, nothing older)."""
    trackers, times = RK.window_trackers_key(namespace), RK.window_times_key(namespace)
    old_trackers = [t for t in _txids(dict.fromkeys(r.hkeys(trackers))) if t < txid - 1]
    old_times = [t for t in _txids(dict.fromkeys(r.hkeys(times))) if t < txid - 1]
    pipe = r.pipeline(transaction=True)
    pipe.hset(trackers, str(txid), record)
    if old_trackers:
        pipe.hdel(trackers, *map(str, old_trackers))
    if old_times:
        pipe.hdel(times, *map(str, old_times))
    pipe.execute()
