"""Per-task snapshots of legacy bolts' in-memory state: incremental, HMAC-protected.

A task's snapshot is a chain of versions in one Redis hash (``keys.snapshot_key``):
field ``b:<txid>`` a *base* (the whole state), ``d:<txid>:<prev>`` a *delta* on
version ``prev`` (what batch ``txid`` changed: ``state/component/deltas.py``); a field named
by a bare txid is a base written by format 1 and is read as one. A batch writes
one version under its txid (fenced: ``lua.SNAPSHOT_PUT``); a replay of the txid
replaces it. The restore point below txid N is the newest committed version
below N followed back along ``prev`` to its base. The script keeps that chain
and the chains of in-flight versions (txid above the committed one) and drops
the rest, so compaction (a new base: ``deltas.should_compact``) frees the old
chain once it commits.

This module never unpickles: it returns verified bytes or raises. A version
whose HMAC (bound to namespace, task and field name) does not match is refused
with ``StateError``: a compromised Redis must not become code execution.
``check_par`` records the par snapshots were cut for (``state/rescale.py``
re-splits dict state when it changes, or refuses).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
from collections.abc import Sequence
from typing import Any

from stormshift.errors import StateError
from stormshift.state import keys as K
from stormshift.state.client import Redis
from stormshift.state.component.build import RestorePoint
from stormshift.state.connection import retrying, run_scripts

log = logging.getLogger("stormshift.state.snapshots")
MAGIC = b"SSNAP1"
HMAC_ENV = "STORMSHIFT_STATE_HMAC_KEY"
DEFAULT_WARN_BYTES = 16 * 1024 * 1024
__all__ = ["HMAC_ENV", "KEY_FILE", "RestorePoint", "SnapshotStore", "field_name", "parse_field",
           "run_key", "sign", "verify", "written_head"]
KEY_FILE = "stormshift-state.key"  # beside a checkpoint: its snapshots' key, made on first use
_FIELD = re.compile(r"^(?:(\d+)|b:(\d+)|d:(\d+):(\d+))$")


def _digest(key: bytes, context: bytes, payload: bytes) -> bytes:
    return hmac.new(key, context + b"\0" + payload, hashlib.sha256).digest()


def sign(key: bytes, context: bytes, payload: bytes) -> bytes:
    """``MAGIC + hmac(context, payload) + payload``; context binds namespace, task and version."""
    return MAGIC + _digest(key, context, payload) + payload


def written_head(blob: bytes) -> bytes:
    """What identifies a stored version: its magic and HMAC (the HMAC binds the field name,
    so the version's txid and prev, and the payload)."""
    return blob[: len(MAGIC) + 32]


def verify(key: bytes, context: bytes, blob: bytes) -> bytes | None:
    """The payload if ``blob`` is authentic for ``context``, else None."""
    if not blob.startswith(MAGIC) or len(blob) < len(MAGIC) + 32:
        return None
    mac, payload = blob[len(MAGIC) : len(MAGIC) + 32], blob[len(MAGIC) + 32 :]
    return payload if hmac.compare_digest(mac, _digest(key, context, payload)) else None


def field_name(txid: int, kind: str = "base", prev: int = -1) -> str:
    """The hash field of a version: ``b:<txid>`` or ``d:<txid>:<prev>``."""
    if kind == "base":
        return f"b:{txid}"
    if kind != "delta" or prev < 0:
        raise ValueError(f"snapshot version kind {kind!r} prev {prev}: a delta needs its prev")
    return f"d:{txid}:{prev}"


def parse_field(field: str) -> tuple[int, int] | None:
    """``(txid, prev)`` of a version field (prev -1: a base), None if not one."""
    m = _FIELD.match(field)
    if m is None:
        return None
    if m.group(3) is not None:
        return int(m.group(3)), int(m.group(4))
    return int(m.group(1) or m.group(2)), -1


def chain_of(fields: Sequence[str], below: int, committed: int) -> list[str]:
    """Fields of the restore point below txid ``below``, base first ([] if none); pure.

    StateError if a delta's ``prev`` is missing (the chain is broken)."""
    by_txid: dict[int, tuple[str, int]] = {}
    for f in fields:
        parsed = parse_field(f)
        if parsed is not None:
            by_txid[parsed[0]] = (f, parsed[1])
    usable = [t for t in by_txid if t < below and t <= committed]
    if not usable:
        return []
    out: list[str] = []
    t = max(usable)
    while True:
        f, prev = by_txid[t]
        out.append(f)
        if prev < 0:
            return out[::-1]
        if prev not in by_txid or prev >= t:
            raise StateError(f"snapshot version {f!r} is a delta on version {prev}, which is "
                             "not in Redis (the chain is broken: a key deleted by hand?). Fix: "
                             "`stormshift state reset` discards the state")
        t = prev


def _key_bytes(hmac_key: bytes | str | None) -> bytes:
    key = hmac_key if hmac_key is not None else os.environ.get(HMAC_ENV)
    if not key:
        raise StateError(
            "snapshots: no HMAC key; snapshots are signed so a tampered Redis cannot make "
            f"the engine unpickle its data. Fix: set {HMAC_ENV} (or state.hmac_key in config)"
        )
    return key.encode() if isinstance(key, str) else key


def run_key(config: Any, checkpoint_dir: str, make: bool = True) -> tuple[bytes, str]:
    """The HMAC key a run on ``checkpoint_dir`` signs snapshots with, and where it came from:
    ``$STORMSHIFT_STATE_HMAC_KEY``, else ``state.hmac_key`` in the topology config, else the
    key file beside the checkpoint (0600; made when ``make``, else StateError when absent).
    One rule for the engine and for ``stormshift cutover``, which signs the seed's bases
    before the run starts."""
    from pathlib import Path

    if os.environ.get(HMAC_ENV):
        return os.environ[HMAC_ENV].encode(), f"${HMAC_ENV}"
    key = config.get("state.hmac_key")
    if key:
        return (key.encode() if isinstance(key, str) else key), "state.hmac_key in config"
    path = Path(checkpoint_dir) / KEY_FILE
    if make:
        import secrets

        from stormshift.private import write_private

        path.parent.mkdir(parents=True, exist_ok=True)
        write_private(path, secrets.token_hex(32))  # 0600; an existing key file is tightened
    elif not path.exists():
        raise StateError(f"snapshots: no HMAC key: {HMAC_ENV} is unset, the config has no "
                         f"state.hmac_key and {path} does not exist. Fix: set {HMAC_ENV} to the "
                         "key the run used")
    return path.read_text(encoding="utf-8").strip().encode(), str(path)


class SnapshotStore:
    """Signed, versioned, fenced, incremental per-task snapshots in one namespace."""

    def __init__(
        self,
        r: Redis,
        namespace: str,
        hmac_key: bytes | str | None = None,
        *,
        warn_bytes: int = DEFAULT_WARN_BYTES,
    ):
        self.r = r
        self.namespace = K.check_name("namespace", namespace)
        self._key = _key_bytes(hmac_key)
        self.warn_bytes = warn_bytes

    def _context(self, component: str, task_index: int, field: str) -> bytes:
        return f"{self.namespace}|{component}|{task_index}|{field}".encode()

    def signed(self, component: str, task_index: int, field: str, payload: bytes) -> bytes:
        """``payload`` signed as version ``field`` of one task (what the scripts store)."""
        return sign(self._key, self._context(component, task_index, field), payload)

    def ops(self, component: str, task_index: int, txid: int, epoch: int, payload: bytes,
            kind: str = "base", prev: int = -1) -> list[tuple[str, list[str], list[Any]]]:
        """The fenced script call writing ``payload`` as version ``txid`` (a ``base``, or a
        ``delta`` on version ``prev``); pure: ``state/task_txn.py`` commits it in its round."""
        size = len(payload)
        if size > self.warn_bytes:
            log.warning(
                "component %r task %d: snapshot %s for txid %d is %d bytes (limit %d); large "
                "snapshots slow the batches that write them. Fix: move big state into a keyed "
                "state map", component, task_index, kind, txid, size, self.warn_bytes,
            )
        field = field_name(txid, kind, prev)
        blob = self.signed(component, task_index, field, payload)
        fence = K.fence_key(self.namespace, K.task_group(component, task_index))
        return [(
            "snapshot_put",
            [fence, K.snapshot_key(self.namespace, component, task_index)],
            [epoch, txid, K.who(component, task_index), field, blob],
        )]

    def save(self, component: str, task_index: int, txid: int, epoch: int, payload: bytes,
             kind: str = "base", prev: int = -1) -> int:
        """Store ``payload`` as version ``txid`` (fenced); returns its size in bytes."""
        run_scripts(self.r, self.ops(component, task_index, txid, epoch, payload, kind, prev))
        return len(payload)

    @retrying
    def _fields(self, component: str, task_index: int) -> list[str]:
        return [f.decode() if isinstance(f, bytes) else f
                for f in self.r.hkeys(K.snapshot_key(self.namespace, component, task_index))]

    def _versions(self, component: str, task_index: int) -> list[int]:
        """Txids of the versions kept for one task, sorted."""
        return sorted(p[0] for f in self._fields(component, task_index)
                      if (p := parse_field(f)) is not None)

    @retrying
    def _committed(self) -> int:
        v = self.r.hget(K.commit_key(self.namespace), "committed")
        return int(v) if v is not None else -1

    def load(self, component: str, task_index: int, txid: int) -> RestorePoint | None:
        """The restore point below ``txid`` (verified payloads); None if there is none.

        Raises StateError (and never returns the bytes) if an HMAC does not verify.
        """
        chain = chain_of(self._fields(component, task_index), txid, self._committed())
        if not chain:
            return None
        blobs = self.r.hmget(K.snapshot_key(self.namespace, component, task_index), chain)
        payloads = []
        for field, blob in zip(chain, blobs):
            if blob is None:  # pruned between the two reads: a newer version committed
                return self.load(component, task_index, txid)
            payload = verify(self._key, self._context(component, task_index, field), blob)
            if payload is None:
                raise StateError(
                    f"component {component!r} task {task_index}: snapshot version {field!r} "
                    f"in namespace {self.namespace!r} failed its integrity check and was refused "
                    f"(not unpickled). Either {HMAC_ENV} differs from the key it was written "
                    "with, or Redis was tampered with. Fix: use the original key, or "
                    "`stormshift state reset`"
                )
            payloads.append(payload)
        version = parse_field(chain[-1])[0]  # type: ignore[index]
        return RestorePoint(version, payloads[0], tuple(payloads[1:]))

    def load_since(self, component: str, task_index: int, txid: int, since: int,
                   head: bytes) -> RestorePoint | None:
        """The deltas that bring version ``since`` to the restore point below ``txid``
        (verified, oldest first; ``base`` empty), if version ``since`` is on that point's
        chain and its stored blob begins with ``head`` (``written_head``: it is the very
        version the caller wrote); None otherwise (the caller restores whole).

        One read of the field names and one script call (``lua.SNAPSHOT_SINCE``: compares
        the head in Redis and returns the later blobs): bytes read follow what changed since
        ``since``, not the state's size.
        """
        chain = chain_of(self._fields(component, task_index), txid, self._committed())
        txids = [parse_field(f)[0] for f in chain]  # type: ignore[index]
        if since not in txids:
            return None
        at = txids.index(since)
        later = chain[at + 1:]
        key = K.snapshot_key(self.namespace, component, task_index)
        (found,) = run_scripts(self.r, [("snapshot_since", [key], [chain[at], head, *later])])
        if not found:  # not our version (replaced by another attempt), or pruned meanwhile
            return None
        payloads = []
        for field, blob in zip(later, found[1:]):
            payload = None if not blob else verify(
                self._key, self._context(component, task_index, field), blob)
            if payload is None:  # pruned between the reads, or not authentic: restore whole
                return None
            payloads.append(payload)
        return RestorePoint(txids[-1], b"", tuple(payloads))

    def check_key(self, tasks: Sequence[tuple[str, int]], where_key: str) -> None:
        """At start-up: EVERY committed snapshot chain among ``tasks`` verifies with our key
        (its integrity check, nothing unpickled); one StateError naming every task refused.

        Otherwise a batch would fail inside a Spark task; ``where_key`` says where this
        run's key came from, so the message can name the fix.
        """
        committed = self._committed()
        refused = []
        for component, task in tasks:
            if any(v <= committed for v in self._versions(component, task)):
                try:
                    self.load(component, task, committed + 1)
                except StateError:
                    refused.append(f"{component!r} task {task}")
        if refused:
            shown = ", ".join(refused[:5]) + (f" and {len(refused) - 5} more" if len(refused) > 5 else "")
            raise StateError(
                f"state namespace {self.namespace!r}: the snapshots of {shown} fail their "
                f"integrity check with this run's key ({where_key}), nothing was unpickled: "
                "signed with another key (state adopted from another --checkpoint dir, whose "
                "stormshift-state.key has it) or tampered with in Redis. Fix: set "
                f"{HMAC_ENV} (or state.hmac_key in the topology config) to the key that wrote "
                "them, or discard the state with --reset-state")

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
                sizes: dict[int, int] = {}
                for f in self.r.hkeys(k):
                    v = parse_field(f.decode() if isinstance(f, bytes) else f)
                    if v is not None:
                        sizes[v[0]] = int(self.r.hstrlen(k, f))
                out[(comp, int(task))] = dict(sorted(sizes.items()))
        return dict(sorted(out.items()))

    def check_par(self, component: str, par: int) -> None:
        """Record ``par`` for a component's snapshots; StateError if they were cut for another
        (the engine calls ``rescale.ensure_par``, which re-splits dict state first)."""
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

    def par_of(self, component: str) -> int | None:
        """The par a component's snapshots were cut for (None: not recorded)."""
        stored = self.r.hget(K.par_key(self.namespace), component)
        return None if stored is None else int(stored)
