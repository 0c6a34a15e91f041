"""Per-task snapshots of legacy bolts' in-memory state, HMAC-protected.

The engine pickles a legacy bolt's attributes after batch ``txid`` and saves
the bytes here; before the next batch it loads the newest *committed*
version below that txid. This module never unpickles: it returns verified
bytes or raises. A snapshot whose HMAC does not match (a tampered or
foreign Redis, another key) is refused with ``StateError`` — a compromised
Redis must not become code execution in the engine.

Versions kept per task: every in-flight one (txid above the committed one)
and the newest committed one; older ones are dropped by the save script.
Snapshots are cut per task, so they cannot follow a change of ``par``:
``check_par`` refuses that and names the fix (keyed state maps).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
from collections.abc import Sequence
from typing import Any

from stormshift.errors import StateError
from stormshift.state import keys as K
from stormshift.state.connection import retrying, run_scripts

log = logging.getLogger("stormshift.state.snapshots")
MAGIC = b"SSNAP1"
HMAC_ENV = "STORMSHIFT_STATE_HMAC_KEY"
DEFAULT_WARN_BYTES = 16 * 1024 * 1024
__all__ = ["HMAC_ENV", "SnapshotStore", "sign", "verify"]


def _digest(key: bytes, context: bytes, payload: bytes) -> bytes:
    return hmac.new(key, context + b"\0" + payload, hashlib.sha256).digest()


def sign(key: bytes, context: bytes, payload: bytes) -> bytes:
    """``MAGIC + hmac(context, payload) + payload``; context binds namespace, task and txid."""
    return MAGIC + _digest(key, context, payload) + payload


def verify(key: bytes, context: bytes, blob: bytes) -> bytes | None:
    """The payload if ``blob`` is authentic for ``context``, else None."""
    if not blob.startswith(MAGIC) or len(blob) < len(MAGIC) + 32:
        return None
    mac, payload = blob[len(MAGIC) : len(MAGIC) + 32], blob[len(MAGIC) + 32 :]
    return payload if hmac.compare_digest(mac, _digest(key, context, payload)) else None


def _key_bytes(hmac_key: bytes | str | None) -> bytes:
    key = hmac_key if hmac_key is not None else os.environ.get(HMAC_ENV)
    if not key:
        raise StateError(
            "snapshots: no HMAC key; snapshots are signed so a tampered Redis cannot make "
            f"the engine unpickle its data. Fix: set {HMAC_ENV} (or state.hmac_key in config)"
        )
    return key.encode() if isinstance(key, str) else key


class SnapshotStore:
    """Signed, versioned, fenced per-task snapshots in one namespace."""

    def __init__(
        self,
        r: Any,
        namespace: str,
        hmac_key: bytes | str | None = None,
        *,
        warn_bytes: int = DEFAULT_WARN_BYTES,
    ):
        self.r = r
        self.namespace = K.check_name("namespace", namespace)
        self._key = _key_bytes(hmac_key)
        self.warn_bytes = warn_bytes

    def _context(self, component: str, task_index: int, txid: int) -> bytes:
        return f"{self.namespace}|{component}|{task_index}|{txid}".encode()

    def ops(self, component: str, task_index: int, txid: int, epoch: int,
            payload: bytes) -> list[tuple[str, list[str], list[Any]]]:
        """The fenced script calls writing ``payload`` as version ``txid`` (pure: for a
        caller that commits a task's writes in one round, ``state/task_txn.py``)."""
        size = len(payload)
        if size > self.warn_bytes:
            log.warning(
                "component %r task %d: snapshot for txid %d is %d bytes (limit %d); large "
                "snapshots slow every batch. Fix: move big state into a keyed state map",
                component, task_index, txid, size, self.warn_bytes,
            )
        blob = sign(self._key, self._context(component, task_index, txid), payload)
        fence = K.fence_key(self.namespace, K.task_group(component, task_index))
        return [(
            "snapshot_save",
            [fence, K.snapshot_key(self.namespace, component, task_index)],
            [epoch, txid, K.who(component, task_index), blob],
        )]

    def save(self, component: str, task_index: int, txid: int, epoch: int, payload: bytes) -> int:
        """Store ``payload`` as version ``txid`` (fenced); returns its size in bytes."""
        run_scripts(self.r, self.ops(component, task_index, txid, epoch, payload))
        return len(payload)

    @retrying
    def _versions(self, component: str, task_index: int) -> list[int]:
        return sorted(int(v) for v in self.r.hkeys(K.snapshot_key(self.namespace, component, task_index)))

    @retrying
    def _committed(self) -> int:
        v = self.r.hget(K.commit_key(self.namespace), "committed")
        return int(v) if v is not None else -1

    def load(self, component: str, task_index: int, txid: int) -> bytes | None:
        """Payload of the newest committed version below ``txid``; None if there is none.

        Raises StateError (and never returns the bytes) if its HMAC does not verify.
        """
        committed = self._committed()
        usable = [v for v in self._versions(component, task_index) if v < txid and v <= committed]
        if not usable:
            return None
        version = usable[-1]
        blob = self.r.hget(K.snapshot_key(self.namespace, component, task_index), str(version))
        if blob is None:
            return None
        payload = verify(self._key, self._context(component, task_index, version), blob)
        if payload is None:
            raise StateError(
                f"component {component!r} task {task_index}: snapshot for txid {version} in "
                f"namespace {self.namespace!r} failed its integrity check and was refused (not "
                f"unpickled). Either {HMAC_ENV} differs from the key it was written with, or "
                "Redis was tampered with. Fix: use the original key, or `stormshift state reset`"
            )
        return payload

    def check_key(self, tasks: Sequence[tuple[str, int]], where_key: str) -> None:
        """At start-up: the first committed snapshot found among ``tasks`` verifies with our key.

        Otherwise the first batch would fail inside a Spark task; ``where_key`` says where
        this run's key came from, so the message can name the fix.
        """
        committed = self._committed()
        for component, task in tasks:
            if any(v <= committed for v in self._versions(component, task)):
                try:
                    self.load(component, task, committed + 1)
                except StateError as exc:
                    raise StateError(
                        f"state namespace {self.namespace!r} holds snapshots signed with another "
                        f"key than this run's ({where_key}); component {component!r} task {task} "
                        f"was refused, nothing was unpickled. This happens when state written "
                        f"under one --checkpoint dir is adopted under another: the key was kept "
                        f"in the old dir's stormshift-state.key. Fix: set {HMAC_ENV} (or "
                        "state.hmac_key in the topology config) to that key, or discard the "
                        "state with --reset-state"
                    ) from exc
                return

    def sizes(self) -> dict[tuple[str, int], dict[int, int]]:
        """Bytes per version per (component, task), for operators."""
        out: dict[tuple[str, int], dict[int, int]] = {}
        for pattern in K.all_keys_pattern(self.namespace):
            for key in self.r.scan_iter(match=pattern, count=1000):
                k = key.decode() if isinstance(key, bytes) else key
                parsed = K.parse_key(k)
                if not parsed or not parsed[2].startswith("snap:"):
                    continue
                _, comp, task = parsed[2].split(":", 2)
                out[(comp, int(task))] = {
                    int(v): int(self.r.hstrlen(k, v)) for v in self.r.hkeys(k)
                }
        return dict(sorted(out.items()))

    def check_par(self, component: str, par: int) -> None:
        """Record ``par`` for a component's snapshots; StateError if they were cut for another."""
        pk = K.par_key(self.namespace)
        stored = self.r.hget(pk, component)
        if stored is None or int(stored) == par:
            self.r.hset(pk, component, par)
            return
        old = int(stored)
        if not any(self._versions(component, t) for t in range(old)):
            self.r.hset(pk, component, par)
            return
        raise StateError(
            f"component {component!r}: its per-task snapshots were taken with par={old}, the "
            f"topology now asks for par={par}. A legacy bolt's in-memory state cannot be re-split "
            "across a different number of tasks. Fix: keep par at "
            f"{old}, or move the bolt's state into a keyed map (stormshift.state.opaque_map / "
            "transactional_map), which rescales freely, or discard it with `stormshift state reset`"
        )
