"""TaskScope: one task attempt's batch of state reads and writes.

The engine wraps each task's batch:

    epoch = acquire_epoch(r, ns, component, task_index)
    with TaskScope(r, ns, component, task_index, txid, epoch):
        for tup in batch: host.execute(tup)      # bolts use maps freely

Maps opened in ``process()`` buffer their writes in the scope; at a clean
exit the scope flushes them as ONE pipelined round of EVALSHA calls (one call
per key group per map, up to ``chunk_keys`` keys each), every call fenced by
(epoch, txid). If the block raises, nothing is written. A FencedError at
flush means a newer attempt owns the task: stop, do not retry. A scope made
with ``defer_flush`` (by a task transaction, ``state/task_txn.py``) writes
nothing at exit: the transaction takes its calls (``seal``) into its commit.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self
from zlib import crc32

from stormshift.errors import StateError
from stormshift.state import keys as K
from stormshift.state.client import Redis
from stormshift.state.codec import encode_delta, encode_key, encode_value, key_packer
from stormshift.state.connection import retrying, run_scripts
from stormshift.state.keys import KEY_GROUPS
from stormshift.state.maps import MapBuffer, _current

__all__ = ["ScopeStats", "TaskScope", "current_scope"]


def current_scope() -> TaskScope | None:
    """The TaskScope running in this thread/context, if any."""
    return _current.get()


@dataclass
class ScopeStats:
    """What one scope did: Redis round trips (reads + flush), script calls, keys written."""

    read_round_trips: int = 0
    flush_round_trips: int = 0
    script_calls: int = 0
    keys_written: int = 0


class TaskScope:
    """State context of one attempt of (component, task_index) for one txid."""

    def __init__(
        self,
        r: Redis,
        namespace: str,
        component: str,
        task_index: int,
        txid: int,
        epoch: int,
        *,
        chunk_keys: int = 2000,
        defer_flush: bool = False,
    ):
        self.r = r
        self.namespace = K.check_name("namespace", namespace)
        self.component = component
        self.task_index = task_index
        self.txid = txid
        self.epoch = epoch
        self.chunk_keys = chunk_keys
        self.defer_flush = defer_flush
        self.stats = ScopeStats()
        self._buffers: dict[str, MapBuffer] = {}
        self._token: contextvars.Token | None = None
        self._done = False

    def __enter__(self) -> Self:
        self._token = _current.set(self)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._token is not None:
            _current.reset(self._token)
            self._token = None
        if exc_type is not None:
            self.discard()
        elif not self.defer_flush:
            self.flush()

    def buffer(self, name: str, kind: str) -> MapBuffer:
        """The buffer of map ``name`` in this scope (one kind per name)."""
        if self._done:
            raise StateError(f"component {self.component!r}: state map {name!r} used after its batch was flushed")
        buf = self._buffers.get(name)
        if buf is None:
            buf = self._buffers[name] = MapBuffer(self, name, kind)
        elif buf.kind != kind:
            raise StateError(
                f"component {self.component!r}: state map {name!r} opened as {kind} and as "
                f"{buf.kind}; fix: give each map one kind (or a different name)"
            )
        return buf

    @property
    def maps(self) -> dict[str, MapBuffer]:
        return dict(self._buffers)

    def read(self, buf: MapBuffer, keys: list[Any]) -> None:
        """Fetch ``keys`` of one map in one pipelined round (HMGET per key group)."""
        by_group: dict[int, tuple[list[Any], list[bytes]]] = {}
        for key in keys:
            field = encode_key(key)
            ks, fs = by_group.setdefault(K.group_of(field), ([], []))
            ks.append(key)
            fs.append(field)
        groups = sorted(by_group)
        results = self._hmget(buf, groups, [by_group[g][1] for g in groups])
        self.stats.read_round_trips += 1
        for g, recs in zip(groups, results):
            for key, rec in zip(by_group[g][0], recs):
                buf.absorb(key, rec, self.txid)

    @retrying
    def _hmget(self, buf: MapBuffer, groups: list[int], fields: list[list[bytes]]) -> list[Any]:
        pipe = self.r.pipeline(transaction=False)
        for g, fs in zip(groups, fields):
            pipe.hmget(K.map_key(self.namespace, g, self.component, buf.name), fs)
        return pipe.execute()

    def calls(self) -> list[tuple[str, list[str], list[Any]]]:
        """The fenced script calls that write every buffered op (pure, no I/O).

        One call per (map, key group, op kind), at most ``chunk_keys`` keys each.
        """
        who = K.who(self.component, self.task_index)
        out: list[tuple[str, list[str], list[Any]]] = []
        for name in sorted(self._buffers):
            buf = self._buffers[name]
            per: dict[tuple[int, str], list[bytes]] = {}
            pack = key_packer()
            small: dict[Any, bytes] = {}  # encoded small int deltas, the common case
            for key, (op, val) in buf.ops.items():
                field = pack(key)
                operand = small.get(val) if op == "i" and type(val) is int else None
                if operand is None:
                    try:
                        operand = encode_delta(val) if op == "i" else encode_value(val)
                    except TypeError as e:
                        raise StateError(
                            f"component {self.component!r}: state map {name!r} key {key!r}: {e}"
                        ) from None
                    if op == "i" and type(val) is int and len(small) < 256:
                        small[val] = operand
                slot = (crc32(field) % KEY_GROUPS, op)
                lst = per.get(slot)
                if lst is None:
                    lst = per[slot] = []
                lst += (field, operand)
            step = 2 * self.chunk_keys
            for g, op in sorted(per):
                flat = per[(g, op)]
                keys = [K.fence_key(self.namespace, g), K.map_key(self.namespace, g, self.component, name)]
                head = [self.epoch, self.txid, who, op]
                for i in range(0, len(flat), step):
                    out.append((buf.kind, keys, head + flat[i : i + step]))
        return out

    def flush(self) -> ScopeStats:
        """Write every buffered op in one pipelined round; FencedError if this attempt is stale."""
        if self._done:
            return self.stats
        calls = self.calls()
        try:
            if calls:
                results = run_scripts(self.r, calls)
                self.stats.flush_round_trips += 1
                self.stats.script_calls += len(calls)
                self.stats.keys_written += sum(int(x) for x in results)
        except Exception as e:
            self._annotate(e)
            raise
        finally:
            self._done = True
        return self.stats

    def seal(self) -> list[tuple[str, list[str], list[Any]]]:
        """The calls writing every buffered op, for a caller that sends them in its own
        round (``defer_flush``); the scope takes no more writes. Empty if discarded."""
        if self._done:
            return []
        try:
            calls = self.calls()
        except Exception as e:
            self._annotate(e)
            raise
        finally:
            self._done = True
        self.stats.script_calls += len(calls)
        return calls

    def discard(self) -> None:
        """Drop every buffered write (the batch failed; a retry recomputes it)."""
        self._buffers.clear()
        self._done = True

    def _annotate(self, e: Exception) -> None:
        if e.args and isinstance(e.args[0], str) and self.component not in e.args[0]:
            e.args = (
                (
                    f"component {self.component!r} task {self.task_index} txid {self.txid} "
                    f"epoch {self.epoch}: {e.args[0]}"
                ),
            ) + e.args[1:]
