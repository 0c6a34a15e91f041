"""Which spout dead letters belong to this run's summary: those of the records it read.

A built-in spout's bad record is dead-lettered by the reader with txid -1 and its
position as identity (``protocol/spoutrange.py``), so a batch re-read -- a Spark task
retried, or a batch re-run by the next run after the driver died -- adds no second
entry. But the run that re-runs the batch then finds no *new* entry for it: counting
only the entries added since the run started would report that run clean (exit 0)
although the batch it committed held dead-lettered records. So the run's spout dead
letters are the new entries plus the older ones whose position lies inside the
ranges of the batches this run committed (Spark's offset log: ``offset_log.py``).
The older entries are looked at once, at the end of the run, and only when there are
any (a cost that follows the dead letters, never the batches).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from stormshift.engines.spark.driver.offset_log import batch_offsets
from stormshift.state.deadletter import DeadLetters

__all__ = ["run_ranges", "run_spout_letters", "within"]

Ranges = dict[str, tuple[Any, Any]]  # partition -> (start or None: from the first record, end]

_INT = re.compile(r"-?\d+")
_ENTRY_ID = re.compile(r"(\d+)-(\d+)")


def _position(offset: Any) -> tuple[int, ...] | None:
    """An offset as an ordered key: a line / Kafka offset, a Redis entry id; None: unknown."""
    text = str(offset)
    if _INT.fullmatch(text):
        return (int(text),)
    m = _ENTRY_ID.fullmatch(text)
    return (int(m[1]), int(m[2])) if m else None


def _partitions(offsets: list[Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for source in offsets or ():
        if isinstance(source, dict) and isinstance(source.get("p"), dict):
            out.update(source["p"])
    return out


def run_ranges(spark_checkpoint: str, batch_ids: Iterable[int]) -> Ranges:
    """Per source partition, the range the committed batches ``batch_ids`` read."""
    ids = sorted(batch_ids)
    if not ids:
        return {}
    ends = _partitions(batch_offsets(spark_checkpoint, ids[-1]))
    starts = _partitions(batch_offsets(spark_checkpoint, ids[0] - 1)) if ids[0] > 0 else {}
    return {p: (starts.get(p), end) for p, end in ends.items()}


def within(tuple_key: str | None, ranges: Ranges) -> bool:
    """True when the record at ``tuple_key`` (``partition:offset``) lies in ``ranges``."""
    if not tuple_key:
        return False
    partition, _, offset = tuple_key.rpartition(":")
    bounds = ranges.get(partition)
    if bounds is None:
        return False
    at, start, end = _position(offset), bounds[0], _position(bounds[1])
    if at is None or end is None or at > end:
        return False
    if start is None:
        return True
    low = _position(start)
    return low is not None and at > low


def run_spout_letters(dead_letters: DeadLetters, mark: str, spouts: set[str], spark_checkpoint: str,
                      committed: Iterable[int]) -> list[Any]:
    """The dead letters this run's summary counts: every entry added since ``mark``, and the
    older spout entries (txid -1) of records inside the committed batches' ranges (module
    doc), oldest first."""
    new = dead_letters.since(mark)
    if dead_letters.count() <= len(new):
        return new
    ranges = run_ranges(spark_checkpoint, committed)
    if not ranges:
        return new
    fresh = {d.id for d in new}
    older = [d for d in dead_letters.list() if d.id not in fresh and d.txid == -1
             and d.component in spouts and within(d.tuple_key, ranges)]
    return older + new
