"""The commit record: committed txid per namespace, and checkpoint -> txid binding.

Words: a *txid* is the Trident transaction id of a batch; the engine uses
``txid = base + batch_id`` where ``base`` comes from ``bind_checkpoint``. A
new Spark checkpoint restarts batch ids at 0, so each checkpoint is bound to
the namespace with a base that keeps txids growing: state already in Redis is
never silently skipped (transactional) nor rejected (opaque).

Call order (driver): ``bind_checkpoint`` once at start; per batch, skip it if
``committed() >= txid``, else run every task, then ``record_commit(txid)``.
"""

from __future__ import annotations

from typing import Any, Literal

from stormshift.errors import StateError
from stormshift.state import keys as K
from stormshift.state.client import Redis
from stormshift.state.connection import retrying, run_scripts

Mode = Literal["strict", "reset", "adopt"]
__all__ = ["CommitLog", "Mode"]


class CommitLog:
    """Committed txid and checkpoint bindings of one state namespace."""

    def __init__(self, r: Redis, namespace: str, lease: Any = None):
        self.r = r
        self.namespace = K.check_name("namespace", namespace)
        #: the committed txid as last read or recorded here: what a driver that lost Redis
        #: says it stopped at (``state/outage.py``), without asking Redis
        self.last_seen = -1
        self.lease = lease  # a ``state.lease.LeaseKeeper``: commits only while it holds

    @retrying
    def committed(self) -> int:
        """The highest committed txid, -1 if none."""
        v = self.r.hget(K.commit_key(self.namespace), "committed")
        self.last_seen = int(v) if v is not None else -1
        return self.last_seen

    def check_format(self) -> None:
        """StateError if a newer stormshift wrote this namespace (its layout is unknown here);
        older formats are read (``keys.FORMAT_VERSION``)."""
        v = self.r.hget(K.commit_key(self.namespace), "format")
        if v is not None and int(v) > K.FORMAT_VERSION:
            raise StateError(
                f"state namespace {self.namespace!r} was written in state format {int(v)} by a "
                f"newer stormshift; this one reads formats up to {K.FORMAT_VERSION}. Fix: run "
                "the newer stormshift, or discard the state with --reset-state")

    def has_state(self) -> bool:
        """True if anything of this namespace is in Redis (besides epochs)."""
        if self.committed() >= 0 or self.r.hlen(K.checkpoints_key(self.namespace)):
            return True
        return any(True for _ in _scan(self.r, self.namespace, limit=1))

    def bind_checkpoint(self, checkpoint_id: str, mode: Mode = "strict") -> int:
        """The txid base for ``checkpoint_id`` (txid = base + Spark batch id).

        A known checkpoint keeps its base. An unknown checkpoint on empty
        state gets base 0. On existing state: ``strict`` raises StateError,
        ``adopt`` continues from the committed state (base = committed + 1),
        ``reset`` deletes maps, snapshots and dedup state first (epochs and
        the committed txid stay, so old attempts remain fenced).
        """
        if mode not in ("strict", "reset", "adopt"):
            raise ValueError(f"bind_checkpoint: mode must be strict, reset or adopt, not {mode!r}")
        if mode != "reset":
            self.check_format()
        ck = K.checkpoints_key(self.namespace)
        known = self.r.hget(ck, checkpoint_id)
        if known is not None and mode != "reset":
            self._broadcast_committed(self.committed())
            return int(known)
        committed = self.committed()
        if self.has_state():
            if mode == "strict":
                raise StateError(
                    f"state namespace {self.namespace!r} already holds state (committed txid "
                    f"{committed}) written under another Spark checkpoint; checkpoint "
                    f"{checkpoint_id!r} is new to it. Fix: pass --adopt-state to continue from "
                    "that state, --reset-state to discard it, or use the old checkpoint dir"
                )
            if mode == "reset":
                reset_namespace(self.r, self.namespace, keep_fences=True)
        base = committed + 1
        self.r.hset(ck, checkpoint_id, base)
        self._broadcast_committed(committed)
        return base

    def checkpoints(self) -> dict[str, int]:
        raw = self.r.hgetall(K.checkpoints_key(self.namespace))
        return {k.decode(): int(v) for k, v in sorted(raw.items())}

    def record_commit(self, txid: int) -> None:
        """Record ``committed = txid``; FencedError if txid is below the committed one, or
        (with a ``lease``) if the run's lease of the namespace was taken over."""
        if self.lease is None:
            call = ("record_commit", [K.commit_key(self.namespace)], [txid, K.FORMAT_VERSION])
        else:
            key, token, epoch = self.lease.commit_args()
            call = ("record_commit_leased", [K.commit_key(self.namespace), key],
                    [txid, K.FORMAT_VERSION, token, epoch])
        run_scripts(self.r, [call])
        self.last_seen = max(self.last_seen, txid)
        self._broadcast_committed(txid)

    def _broadcast_committed(self, txid: int) -> None:
        if txid < 0:
            return
        run_scripts(
            self.r,
            [("fence_committed", [K.fence_key(self.namespace, g)], [txid]) for g in range(K.KEY_GROUPS)],
        )


def _scan(r: Redis, namespace: str, limit: int | None = None) -> Any:
    """Data keys of a namespace (maps, snapshots, task keys, dedup); not fences or records."""
    n = 0
    for pattern in K.all_keys_pattern(namespace):
        for key in r.scan_iter(match=pattern, count=1000):
            k = key.decode() if isinstance(key, bytes) else key
            parsed = K.parse_key(k)
            if parsed is None or parsed[0] != namespace or parsed[1] is None:
                continue
            if parsed[2] == "fence":
                continue
            yield k
            n += 1
            if limit is not None and n >= limit:
                return


def _namespace_wide(r: Redis, namespace: str) -> set[str]:
    """Keys ``ss:{ns}:*`` (not in a key group)."""
    keys = (k.decode() if isinstance(k, bytes) else k
            for k in r.scan_iter(match=K.all_keys_pattern(namespace)[0], count=1000))
    return {k for k in keys if (p := K.parse_key(k)) is not None and p[0] == namespace and p[1] is None}


def reset_namespace(r: Redis, namespace: str, *, keep_fences: bool = True) -> int:
    """Delete a namespace's data; with ``keep_fences`` epochs and commit record survive."""
    doomed = list(_scan(r, namespace))
    if not keep_fences:
        # Every namespace-wide key (commit record, checkpoint bindings, dead letters and
        # their dedup index, redrive queues, batch stats) but the epoch counter, which never
        # expires or resets: zombies of old runs stay fenced.
        kept = {K.epochs_key(namespace), K.lease_key(namespace)}  # the lease: a run's, not state
        doomed += sorted(k for k in _namespace_wide(r, namespace) if k not in kept)
        doomed += [K.fence_key(namespace, g) for g in range(K.KEY_GROUPS)]
    else:  # the state is gone: it belongs to no topology any more (state/owner.py)
        doomed += [K.par_key(namespace), K.owner_key(namespace)]
    for key in doomed:
        r.delete(key)
    return len(doomed)
