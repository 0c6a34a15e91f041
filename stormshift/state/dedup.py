"""Dropping re-emitted tuples by message/event id within a retention window.

Two modes, both fenced by the running attempt's (epoch, txid) and both
replay-safe: a replayed batch never counts its own ids as duplicates.

* ``ExactDedup``: time buckets of ``bucket_ms``, each a hash id -> txid with a
  TTL; memory grows with the number of ids in the window.
* ``BloomDedup``: ``segments`` Bloom filters of one time slice each
  (retention / segments), MillWheel-style: memory is fixed at
  ``segments * m_bits / 8`` bytes; the oldest segment is cleared as time
  advances. False positives drop genuine records: size it with ``choose``
  and check with ``false_positive_rate`` / ``expected_false_drops``.

Time is injected (``now_ms``); nothing reads the wall clock.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Any

from stormshift.errors import StateError
from stormshift.state import keys as K
from stormshift.state.client import Redis
from stormshift.state.connection import retrying, run_scripts
from stormshift.state.scope import TaskScope, current_scope

__all__ = ["BloomDedup", "ExactDedup", "choose", "expected_false_drops", "false_positive_rate"]


def false_positive_rate(n: int, m: int, k: int) -> float:
    """p = (1 - e^(-k n / m))^k: chance a new id looks seen in one segment holding n ids."""
    if n <= 0:
        return 0.0
    return (1.0 - math.exp(-k * n / m)) ** k


def expected_false_drops(n: int, m: int, k: int, probes: int, segments: int = 1) -> float:
    """Genuine records expected to be dropped among ``probes`` new ids, ``n`` ids per segment."""
    p = false_positive_rate(n, m, k)
    return probes * (1.0 - (1.0 - p) ** segments)


def choose(n: int, fp_rate: float) -> tuple[int, int]:
    """``(m_bits, k)`` for ``n`` ids per segment at false-positive rate ``fp_rate``."""
    if not 0 < fp_rate < 1 or n <= 0:
        raise ValueError("choose: need n > 0 and 0 < fp_rate < 1")
    m = math.ceil(-n * math.log(fp_rate) / (math.log(2) ** 2))
    k = max(1, round(m / n * math.log(2)))
    return m, k


def _id_bytes(x: Any) -> bytes:
    return x if isinstance(x, bytes) else str(x).encode()


def _fence_args(scope: TaskScope | None) -> tuple[TaskScope, list[Any]]:
    scope = scope or current_scope()
    if scope is None:
        raise StateError(
            "dedup: called outside a task batch; ids are recorded under the batch's txid and "
            "epoch. Fix: call it inside the engine's TaskScope (or pass scope=)"
        )
    return scope, [scope.epoch, scope.txid, K.who(scope.component, scope.task_index)]


def _in_call_dups(ids: Sequence[bytes], seen: set[bytes]) -> list[bool]:
    """True for ids already met earlier in this attempt (and marks the rest as met)."""
    out = []
    for i in ids:
        out.append(i in seen)
        seen.add(i)
    return out


class _Base:
    def __init__(self, r: Redis, namespace: str, name: str, retention_ms: int):
        if retention_ms <= 0:
            raise ValueError("dedup: retention_ms must be > 0")
        self.r = r
        self.namespace = K.check_name("namespace", namespace)
        self.name = K.check_name("dedup name", name)
        self.retention_ms = retention_ms
        self._fence = K.fence_key(namespace, K.name_group(name))
        self._attempt: tuple[int, int] | None = None
        self._met: set[bytes] = set()

    def _met_in_attempt(self, scope: TaskScope) -> set[bytes]:
        attempt = (scope.txid, scope.epoch)
        if attempt != self._attempt:
            self._attempt, self._met = attempt, set()
        return self._met

    def seen(self, ids: Sequence[Any], now_ms: int, scope: TaskScope | None = None) -> list[bool]:
        """For each id: True if it is a duplicate (drop it); records the new ones."""
        scope, head = _fence_args(scope)
        raw = [_id_bytes(i) for i in ids]
        local = _in_call_dups(raw, self._met_in_attempt(scope))
        fresh = [i for i, dup in zip(raw, local) if not dup]
        remote = iter(self._record(fresh, now_ms, head) if fresh else [])
        return [True if dup else bool(next(remote)) for dup in local]

    def _record(self, ids: list[bytes], now_ms: int, head: list[Any]) -> list[int]:
        raise NotImplementedError


class ExactDedup(_Base):
    """Exact dedup: time-bucketed hashes id -> first txid, expiring after the window."""

    def __init__(self, r: Redis, namespace: str, name: str, *, retention_ms: int, bucket_ms: int | None = None):
        super().__init__(r, namespace, name, retention_ms)
        self.bucket_ms = bucket_ms or max(1, retention_ms // 4)

    def _buckets(self, now_ms: int) -> list[str]:
        b = now_ms // self.bucket_ms
        n = -(-self.retention_ms // self.bucket_ms)
        return [K.dedup_key(self.namespace, self.name, "x", b - i) for i in range(n + 1)]

    def _record(self, ids: list[bytes], now_ms: int, head: list[Any]) -> list[int]:
        b = now_ms // self.bucket_ms
        ttl_ms = (b + 1) * self.bucket_ms + self.retention_ms - now_ms
        (res,) = run_scripts(
            self.r, [("dedup_exact", [self._fence, *self._buckets(now_ms)], [*head, ttl_ms, *ids])]
        )
        return res


class BloomDedup(_Base):
    """Approximate dedup in fixed memory: ``segments`` time-sliced Bloom filters of m bits."""

    def __init__(
        self, r: Redis, namespace: str, name: str, *, retention_ms: int, segments: int = 4,
        m_bits: int = 1 << 23, k: int = 7,
    ):
        super().__init__(r, namespace, name, retention_ms)
        if segments < 1 or m_bits < 8 or k < 1 or m_bits >= 2**32:
            raise ValueError("BloomDedup: need segments >= 1, 8 <= m_bits < 2**32, k >= 1")
        self.segments, self.m_bits, self.k = segments, m_bits, k
        self.slice_ms = max(1, retention_ms // segments)

    @classmethod
    def for_rate(cls, r: Redis, namespace: str, name: str, *, retention_ms: int, ids_per_slice: int,
                 fp_rate: float, segments: int = 4) -> BloomDedup:
        """Sized by ``choose`` for ``ids_per_slice`` ids per time slice at ``fp_rate`` each."""
        m, k = choose(ids_per_slice, fp_rate)
        return cls(r, namespace, name, retention_ms=retention_ms, segments=segments, m_bits=m, k=k)

    def _segment_keys(self, now_ms: int) -> list[str]:
        s = now_ms // self.slice_ms
        return [K.dedup_key(self.namespace, self.name, "b", s - i) for i in range(self.segments)]

    def _hashes(self, ids: list[bytes]) -> list[int]:
        out: list[int] = []
        for i in ids:
            d = hashlib.blake2b(i, digest_size=8).digest()
            out += (int.from_bytes(d[:4], "little"), int.from_bytes(d[4:], "little") | 1)
        return out

    def _record(self, ids: list[bytes], now_ms: int, head: list[Any]) -> list[int]:
        s = now_ms // self.slice_ms
        keys = [
            self._fence,
            K.dedup_key(self.namespace, self.name, "p", 0),
            K.dedup_key(self.namespace, self.name, "pm", 0),
            K.dedup_key(self.namespace, self.name, "b", s - self.segments),
            *self._segment_keys(now_ms),
        ]
        ttl_ms = (self.segments + 1) * self.slice_ms
        (res,) = run_scripts(
            self.r, [("dedup_bloom", keys, [*head, ttl_ms, self.m_bits, self.k, *self._hashes(ids)])]
        )
        return res

    @retrying
    def contains(self, ids: Sequence[Any], now_ms: int, *, chunk: int = 20000) -> list[bool]:
        """Read-only: would each id be dropped now? (live segments and the pending bits)."""
        keys = [K.dedup_key(self.namespace, self.name, "p", 0), *self._segment_keys(now_ms)]
        raw = [_id_bytes(i) for i in ids]
        calls = [
            ("bloom_check", keys, [self.m_bits, self.k, *self._hashes(raw[j : j + chunk])])
            for j in range(0, len(raw), chunk)
        ]
        return [bool(x) for res in run_scripts(self.r, calls) for x in res]

    def memory_bytes(self) -> int:
        """Upper bound of the Redis memory the filter's bitmaps use."""
        return (self.segments + 2) * -(-self.m_bits // 8)
