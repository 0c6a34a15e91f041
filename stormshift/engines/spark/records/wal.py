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

Replays: a reliable spout that restarts re-emits tuples it had emitted
before (Storm: everything not yet acked; a tailer without saved offsets:
everything). ``append`` logs, in the same script as the chunk, each
tuple's *msg key* (its packed msg id) -> ``[seq, digest of stream and
values]``; ``replays`` finds the emits whose msg id AND content were
already logged, so the planner drops them instead of counting them twice.
A reused msg id with different values is a new tuple (Storm only requires
ids unique among pending tuples). Msg keys are kept for a window of the
last ``seen_window`` .. 2x ``seen_window`` logged tuples per task (two
alternating hashes): a spout must not re-emit older tuples than that.
Tuples emitted without a msg id (unreliable in Storm) cannot be recognised.

Writes (append, trim) are fenced by the spout task's epoch (FencedWriter):
a zombie planner cannot interleave chunks with its successor. WAL writes are
not tied to a txid (batches are numbered only later, by Spark), so they use
``WAL_TXID``, above any txid, and only the epoch check applies.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import Any

import msgpack
from redis.exceptions import ResponseError

from stormshift.engines.spark.records import keys as RK
from stormshift.errors import StateError
from stormshift.state.client import Redis
from stormshift.state.connection import run_scripts
from stormshift.state.fencing import FencedWriter, acquire_epoch

__all__ = ["DEFAULT_SEEN_WINDOW", "WAL_TXID", "Entry", "WriteAheadLog", "content_digest"]

WAL_TXID = 2**53  # fencing by epoch only: WAL chunks precede any txid
DEFAULT_SEEN_WINDOW = 500_000
Entry = tuple[int, Sequence[int], bytes]  # (stream code, target task ids, packed values)


class WriteAheadLog:
    """The log of one spout task. Planner: ``open_for_append`` then ``append``/``trim``;
    executors: ``read`` only (no epoch needed)."""

    def __init__(self, r: Redis, namespace: str, component: str, task_index: int,
                 seen_window: int = DEFAULT_SEEN_WINDOW):
        self.r = r
        self.seen_window = max(int(seen_window), 1)
        self.namespace = namespace
        self.component = component
        self.task_index = task_index
        self._writer = FencedWriter(r, namespace, component, task_index, WAL_TXID, 0)
        self.key = RK.wal_key(namespace, component, task_index)
        self._head: int | None = None
        self._pack = msgpack.Packer(use_bin_type=True).pack  # one packer, not one per call

    # -- planner side ------------------------------------------------------
    def open_for_append(self) -> int:
        """Take a new epoch (fencing any older planner) and return the logged head seq."""
        self._writer.epoch = acquire_epoch(self.r, self.namespace, self.component, self.task_index)
        self._head = self.head()
        return self._head

    def head(self) -> int:
        """Seq after the last logged tuple (0 for an empty log)."""
        last = self.r.xrevrange(self.key, "+", "-", count=1)
        if last:
            return _end_of(last[0][0])
        # Empty: never written, or every chunk trimmed after its batch committed. The
        # stream remembers its last id; a log restarting at 0 would be refused by XADD.
        try:
            info = self.r.xinfo_stream(self.key)
        except ResponseError:  # "no such key": never written (an outage is not caught here)
            return 0
        return _end_of(info["last-generated-id"])

    def first_seq(self, head: int) -> int:
        """Seq of the first tuple still logged (``head`` if every chunk was trimmed)."""
        first = self.r.xrange(self.key, "-", "+", count=1)
        if not first:
            return head
        start, _ = msgpack.unpackb(first[0][1][b"c"], raw=False)
        return int(start)

    def append(self, start_seq: int, entries: Sequence[Entry],
               msg_keys: Sequence[tuple[bytes, bytes] | None] | None = None) -> int:
        """Log ``entries`` as the chunk starting at ``start_seq``; returns the new head.

        ``msg_keys[i]`` is ``(msg key, content digest)`` of entry i (None: no msg id);
        they are recorded atomically with the chunk. Raises FencedError if a newer
        planner owns the task, and StateError if ``start_seq`` is not the head, so
        no gap or overlap can be written.
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
        payload = self._pack((start_seq, entries))  # tuples pack as arrays: no copy
        keys, args = self._seen_writes(start_seq, end, msg_keys or ())
        w = self._writer
        run_scripts(self.r, [("wal_append", [w.fence_key, self.key, *keys],
                              [w.epoch, w.txid, w.who, f"{end}-0", payload, *args])])
        self._head = end
        return end

    def _bucket(self, seq: int) -> str:
        return RK.wal_seen_key(self.namespace, self.component, self.task_index, seq // self.seen_window)

    def _seen_writes(self, start: int, end: int,
                     msg_keys: Sequence[tuple[bytes, bytes] | None]) -> tuple[list[str], list[Any]]:
        """Keys and args of ``wal_append`` for the msg keys of seqs ``start..end-1``."""
        by_bucket: dict[int, list[bytes]] = {}
        pack, window = self._pack, self.seen_window
        flat: list[bytes] = []
        bucket = -1
        for seq, item in enumerate(msg_keys, start):
            if item is not None:
                if seq // window != bucket:
                    bucket = seq // window
                    flat = by_bucket.setdefault(bucket, [])
                flat += (item[0], pack((seq, item[1])))
        keys: list[str] = []
        args: list[Any] = []
        first, last = start // self.seen_window, (end - 1) // self.seen_window
        for b in range(first, last + 1):  # entering bucket b: bucket b-2 leaves the window
            if b >= 2 and start <= b * self.seen_window < end:
                keys.append(self._bucket((b - 2) * self.seen_window))
                args += ["del", 0]
        for b, flat in sorted(by_bucket.items()):
            keys.append(self._bucket(b * self.seen_window))
            args += ["hset", len(flat) // 2, *flat]
        return keys, args

    def replays(self, msg_keys: Sequence[tuple[bytes, bytes] | None]) -> list[int | None]:
        """Per item: the seq under which the same msg id with the same content was
        logged (a replay), else None. Looks in the live window of msg keys."""
        wanted = [item[0] for item in msg_keys if item is not None]
        if not wanted:
            return [None] * len(msg_keys)
        head = self._head if self._head is not None else self.head()
        cur = head // self.seen_window
        pipe = self.r.pipeline(transaction=False)
        for b in (cur, cur - 1):
            if b >= 0:
                pipe.hmget(self._bucket(b * self.seen_window), wanted)
        found: dict[bytes, tuple[int, bytes]] = {}
        for values in pipe.execute():
            for field, raw in zip(wanted, values):
                if raw is not None and field not in found:
                    seq, digest = msgpack.unpackb(raw, raw=False)
                    found[field] = (int(seq), bytes(digest))
        out: list[int | None] = []
        for item in msg_keys:
            hit = found.get(item[0]) if item is not None else None
            out.append(hit[0] if hit is not None and item is not None and hit[1] == item[1] else None)
        return out

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
        """Remove the whole log and its msg keys (tests, ``state reset``)."""
        self.r.delete(self.key)
        for key in self.r.scan_iter(match=RK.wal_seen_key(self.namespace, self.component, self.task_index, "*")):
            self.r.delete(key)


def content_digest(code: int, packed_values: bytes) -> bytes:
    """8 bytes identifying a tuple's stream and values (replay = same msg id, same digest)."""
    return hashlib.blake2b(b"%d|" % code + packed_values, digest_size=8).digest()


def _end_of(stream_id: bytes | str) -> int:
    text = stream_id.decode() if isinstance(stream_id, bytes) else stream_id
    return int(text.split("-", 1)[0])
