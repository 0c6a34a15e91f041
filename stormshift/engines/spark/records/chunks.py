"""The chunk log of a spout task that runs on executors: one chunk of tuples per batch.

A generic spout in executor mode (``engines/spark/source/read/chunk_read.py``) runs its
``next_tuple`` in the read of its batch's input partition. The first read of
batch chunk *k* of task *i* logs what the spout emitted here, before any row
leaves; every later read of chunk *k* (a retried task, a batch re-run after a
driver crash) re-reads it, so a batch holds the same tuples however often it
runs.

Words:
- *chunk number*: chunks of one task are numbered 0, 1, 2, ... in the order
  they were planned (Spark's offset log holds the number each batch reads).
- *head* (header): ``ChunkHead``: the chunk's first seq (tuples the task logged
  before it), its count, whether the spout's input ended with it, and a digest
  of its msg ids (a replayed instance proves it re-emitted the same ids) plus
  the last msg id (what a spout's ``resume`` hook is given). Heads are small
  and kept: the planner reads them (counts, end of input) and a fresh instance
  checks its replay against them.
- *payload*: the chunk's entries (``[stream code, target task ids, packed
  values]``, as in ``wal.py``) and msg ids; dropped once its batch committed.
- *ack mark*: chunks below it are in committed batches (the planner's
  ``commit``); the instance acks their msg ids before its next read. One
  integer per task: the ack channel never grows.
- *stats*: how often a read had to build an instance and how many tuples it
  re-emitted to reach the head (``count``; nothing reads them to decide).

Writes of a chunk are fenced by the epoch the read attempt took (``fencing``)
and first-writer-wins per chunk number (``chunk_put``): a second attempt
finds the chunk and re-reads it, a zombie is rejected.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, NamedTuple

import msgpack

from stormshift.engines.spark.records import keys as RK
from stormshift.engines.spark.records.wal import WAL_TXID
from stormshift.state import keys as K
from stormshift.state.client import Redis
from stormshift.state.connection import run_scripts
from stormshift.state.fencing import acquire_epoch

__all__ = ["ChunkHead", "ChunkLog", "ids_digest"]


class ChunkHead(NamedTuple):
    start: int  # seq of the chunk's first tuple
    tuples: int
    ended: bool  # the spout's input ended with this chunk
    digest: bytes  # ids_digest of its msg ids
    last_id: Any  # msg id of its last tuple (None: none, or an empty chunk)

    @property
    def end(self) -> int:
        return self.start + self.tuples


def ids_digest(msg_ids: Sequence[Any]) -> bytes:
    """16 bytes identifying a sequence of msg ids (ids msgpack cannot encode count by repr)."""
    return hashlib.blake2b(msgpack.packb(list(msg_ids), default=repr, use_bin_type=True),
                           digest_size=16).digest()


def _plain_id(msg_id: Any) -> Any:
    try:
        msgpack.packb(msg_id, use_bin_type=True)
        return msg_id
    except (TypeError, ValueError, OverflowError):
        return repr(msg_id)


class ChunkLog:
    """The chunk log of one spout task (module doc)."""

    def __init__(self, r: Redis, namespace: str, component: str, task_index: int):
        self.r, self.namespace, self.component, self.task_index = r, namespace, component, task_index
        self.heads_key = RK.chunk_key(namespace, component, task_index, "heads")
        self.data_key = RK.chunk_key(namespace, component, task_index, "data")
        self.acked_key = RK.chunk_key(namespace, component, task_index, "acked")
        self.stats_key = RK.chunk_key(namespace, component, task_index, "stats")
        self.fence_key = K.fence_key(namespace, K.task_group(component, task_index))
        self.who = K.who(component, task_index)
        self.epoch = 0

    # -- executor side -------------------------------------------------------
    def take_epoch(self) -> int:
        """A new epoch for this read attempt: fences every older attempt of the task."""
        self.epoch = acquire_epoch(self.r, self.namespace, self.component, self.task_index)
        return self.epoch

    def put(self, number: int, head: ChunkHead, entries: Sequence[Any], msg_ids: Sequence[Any]) -> bool:
        """Log chunk ``number``; False if it was logged already (by another attempt).
        Raises FencedError if a newer attempt took the task."""
        pack = msgpack.Packer(use_bin_type=True).pack
        header = pack([head.start, head.tuples, head.ended, head.digest, _plain_id(head.last_id)])
        payload = pack([list(entries), [_plain_id(m) for m in msg_ids]])
        (done,) = run_scripts(self.r, [("chunk_put", [self.fence_key, self.heads_key, self.data_key],
                                        [self.epoch, WAL_TXID, self.who, number, header, payload])])
        return bool(done)

    def payload(self, number: int) -> tuple[list[Any], list[Any]] | None:
        """``(entries, msg ids)`` of chunk ``number``, None if not logged (or trimmed)."""
        raw = self.r.hget(self.data_key, number)
        if raw is None:
            return None
        entries, msg_ids = msgpack.unpackb(raw, raw=False, strict_map_key=False)
        return entries, msg_ids

    def payloads(self, numbers: Sequence[int]) -> list[tuple[list[Any], list[Any]] | None]:
        if not numbers:
            return []
        out: list[tuple[list[Any], list[Any]] | None] = []
        for raw in self.r.hmget(self.data_key, list(numbers)):
            out.append(None if raw is None else tuple(msgpack.unpackb(raw, raw=False, strict_map_key=False)))  # type: ignore[arg-type]
        return out

    # -- both sides ------------------------------------------------------------
    def heads(self, numbers: Sequence[int]) -> list[ChunkHead | None]:
        if not numbers:
            return []
        return [None if raw is None else _head(raw) for raw in self.r.hmget(self.heads_key, list(numbers))]

    def head(self, number: int) -> ChunkHead | None:
        return self.heads([number])[0] if number >= 0 else None

    def next_number(self) -> int:
        """The number the next chunk gets (heads are kept, numbered from 0)."""
        return int(self.r.hlen(self.heads_key))

    def acked(self) -> int:
        raw = self.r.get(self.acked_key)
        return int(raw) if raw is not None else 0

    def count(self, **fields: int) -> None:
        """Add to the task's catch-up counters (``fresh`` instances built, ``resumed``,
        ``replayed`` tuples re-emitted to reach the head): for benches and tests."""
        pipe = self.r.pipeline(transaction=False)
        for name, n in sorted(fields.items()):
            pipe.hincrby(self.stats_key, name, n)
        pipe.execute()

    def stats(self) -> dict[str, int]:
        return {k.decode(): int(v) for k, v in self.r.hgetall(self.stats_key).items()}

    # -- planner side ----------------------------------------------------------
    def ack_through(self, mark: int, trimmed_from: int) -> None:
        """Chunks below ``mark`` are in committed batches: raise the ack mark (never lower
        it) and drop their payloads (numbers ``trimmed_from`` .. ``mark - 1``)."""
        pipe = self.r.pipeline(transaction=False)
        pipe.set(self.acked_key, mark)
        if mark > trimmed_from:
            pipe.hdel(self.data_key, *range(trimmed_from, mark))
        pipe.execute()

    def delete(self) -> None:
        self.r.delete(self.heads_key, self.data_key, self.acked_key, self.stats_key)


def _head(raw: bytes) -> ChunkHead:
    start, count, ended, digest, last_id = msgpack.unpackb(raw, raw=False, strict_map_key=False)
    return ChunkHead(int(start), int(count), bool(ended), bytes(digest), last_id)
