"""The spout write-ahead log: what a generic spout emitted, before Spark plans it.

A generic (non-replayable) spout runs ``next_tuple()`` in the Spark engine's
long-lived planning process. Everything it emits is appended here *before*
the batch's end offset is handed to Spark, so an executor re-reading a batch
after any crash gets exactly the same tuples in the same order.

Words:
- *seq*: the number of tuples one spout task has logged so far. The offset
  of a task is a seq: a batch ``(start, end]`` holds the tuples with
  ``start <= seq < end``.
- *chunk*: the tuples of one ``append`` call, stored as ONE msgpack entry of
  a Redis stream (never one entry per tuple). Its stream id is ``<end>-0``,
  so ids grow with seq and ``XRANGE (start+1)-0 +`` finds every chunk that
  ends after ``start``.
- *entry*: one logged tuple: ``[stream code, target task ids, packed values]``
  (values already msgpack bytes, so executors forward them without re-encoding).

Writes (append, trim) are fenced by the spout task's epoch (FencedWriter):
a zombie planner cannot interleave chunks with its successor. WAL writes are
not tied to a txid (batches are numbered only later, by Spark), so they use
``WAL_TXID``, above any txid, and only the epoch check applies.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import msgpack

from stormshift.errors import StateError
from stormshift.state.fencing import FencedWriter, acquire_epoch

__all__ = ["WriteAheadLog", "Entry", "WAL_TXID"]

WAL_TXID = 2**53  # fencing by epoch only: WAL chunks precede any txid
Entry = tuple[int, Sequence[int], bytes]  # (stream code, target task ids, packed values)


class WriteAheadLog:
    """The log of one spout task. Planner: ``open_for_append`` then ``append``/``trim``;
    executors: ``read`` only (no epoch needed)."""

    def __init__(self, r: Any, namespace: str, component: str, task_index: int):
        self.r = r
        self.namespace = namespace
        self.component = component
        self.task_index = task_index
        self._writer = FencedWriter(r, namespace, component, task_index, WAL_TXID, 0)
        self.key = self._writer.key("wal")
        self._head: int | None = None

    # -- planner side ------------------------------------------------------
    def open_for_append(self) -> int:
        """Take a new epoch (fencing any older planner) and return the logged head seq."""
        self._writer.epoch = acquire_epoch(self.r, self.namespace, self.component, self.task_index)
        self._head = self.head()
        return self._head

    def head(self) -> int:
        """Seq after the last logged tuple (0 for an empty log)."""
        last = self.r.xrevrange(self.key, "+", "-", count=1)
        if not last:
            return 0
        return _end_of(last[0][0])

    def append(self, start_seq: int, entries: Sequence[Entry]) -> int:
        """Log ``entries`` as the chunk starting at ``start_seq``; returns the new head.

        Raises FencedError if a newer planner owns the task, and StateError if
        ``start_seq`` is not the head, so no gap or overlap can be written.
        """
        if self._head is None:
            raise StateError(f"spout {self.component!r} task {self.task_index}: write-ahead log "
                             "appended before open_for_append()")
        if start_seq != self._head:
            raise StateError(
                f"spout {self.component!r} task {self.task_index}: write-ahead log chunk starts at "
                f"seq {start_seq} but the log ends at {self._head} (a gap or an overlap)")
        if not entries:
            return start_seq
        end = start_seq + len(entries)
        payload = msgpack.packb([start_seq, [list(e) for e in entries]], use_bin_type=True)
        self._writer.call("XADD", self.key, f"{end}-0", "c", payload)
        self._head = end
        return end

    def trim(self, committed_seq: int) -> None:
        """Drop chunks whose tuples all lie below ``committed_seq`` (their batch committed)."""
        if committed_seq > 0:
            self._writer.call("XTRIM", self.key, "MINID", f"{committed_seq + 1}-0")

    # -- executor side -----------------------------------------------------
    def read(self, start_seq: int, end_seq: int) -> Iterator[Entry]:
        """The logged tuples with ``start_seq <= seq < end_seq``, in order."""
        if end_seq <= start_seq:
            return
        for stream_id, fields in self.r.xrange(self.key, f"{start_seq + 1}-0", "+"):
            chunk_start, entries = msgpack.unpackb(fields[b"c"], raw=False)
            if chunk_start >= end_seq:
                return
            lo = max(start_seq - chunk_start, 0)
            hi = min(end_seq - chunk_start, len(entries))
            for e in entries[lo:hi]:
                yield e[0], e[1], e[2]
            if _end_of(stream_id) >= end_seq:
                return

    def delete(self) -> None:
        """Remove the whole log (tests, ``state reset``)."""
        self.r.delete(self.key)


def _end_of(stream_id: bytes | str) -> int:
    text = stream_id.decode() if isinstance(stream_id, bytes) else stream_id
    return int(text.split("-", 1)[0])
