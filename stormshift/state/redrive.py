"""Redrive: dead letters sent back into the topology after a fix, each exactly once.

Three places an entry can be, and it is always in exactly one of them:

1. the dead-letter stream (``ss:{ns}:dlq``, see ``deadletter.py``);
2. the redrive stream (``ss:{ns}:redrive``): ``move`` puts chosen dead letters
   here (``stormshift deadletter replay``), copy + delete in ONE Lua script;
3. the claim of one txid (``ss:{ns}:redrive-tx:TXID``): the Spark driver,
   planning batch TXID, calls ``claim``, which moves every waiting entry
   there and records ``TXID -> n`` in ``ss:{ns}:redrive-claims``, atomically.
   A re-run of the batch (crash before commit) finds the record and gets the
   very same entries -- the same decision, like ticks (``ticks.TickRecorder``)
   -- and an entry claimed by one txid is never seen by another.

After TXID commits the driver calls ``trim(TXID)``: claims at or below it are
deleted (their tuples are in committed state now). A claim left by a crashed
driver belongs to the next txid to run, which is always ``committed + 1``.
"""

from __future__ import annotations

from collections.abc import Sequence

from stormshift.state import keys as K
from stormshift.state.client import Redis
from stormshift.state.connection import retrying
from stormshift.state.deadletter import DeadLetter, decode_entry
from stormshift.state.lua_ns import REDRIVE_CLAIM, REDRIVE_MOVE

__all__ = ["MAX_CLAIM", "Redrive"]

MAX_CLAIM = 10_000  # entries one batch takes; the rest wait for the next batch


class Redrive:
    """The redrive stream and per-txid claims of one namespace."""

    def __init__(self, r: Redis, namespace: str):
        self.r = r
        self.namespace = K.check_name("namespace", namespace)
        self.key = K.redrive_key(namespace)
        self.claims_key = K.redrive_claims_key(namespace)
        self._move = r.register_script(REDRIVE_MOVE)
        self._claim = r.register_script(REDRIVE_CLAIM)

    def claim_key(self, txid: int) -> str:
        return K.redrive_txid_key(self.namespace, txid)

    # -- operator side -------------------------------------------------------
    @retrying
    def move(self, dlq_ids: Sequence[str]) -> list[str]:
        """Move dead letters into the redrive stream; returns the ids moved (absent ones skipped)."""
        if not dlq_ids:
            return []
        moved = self._move(keys=[K.dlq_key(self.namespace), self.key], args=list(dlq_ids))
        return [m.decode() if isinstance(m, bytes) else str(m) for m in moved]

    @retrying
    def waiting(self) -> list[DeadLetter]:
        """Entries no batch has claimed yet, oldest first."""
        return [decode_entry(i, raw) for i, raw in self.r.xrange(self.key)]

    @retrying
    def claimed(self, above: int = -1) -> dict[int, int]:
        """``txid -> n`` of claims above txid ``above`` (claimed, not yet committed)."""
        raw = self.r.hgetall(self.claims_key)
        out = {int(k): int(v) for k, v in raw.items()}
        return {t: n for t, n in sorted(out.items()) if t > above}

    # -- driver side ---------------------------------------------------------
    @retrying
    def claim(self, txid: int, max_entries: int = MAX_CLAIM) -> list[DeadLetter]:
        """The entries batch ``txid`` redrives: the same list on every call for one txid."""
        n = int(self._claim(keys=[self.key, self.claims_key, self.claim_key(txid)],
                            args=[int(txid), int(max_entries)]))
        if n == 0:
            return []
        return [decode_entry(i, raw) for i, raw in self.r.xrange(self.claim_key(txid))]

    @retrying
    def trim(self, committed: int) -> int:
        """Forget claims of txids ``<= committed`` (idempotent); returns how many went."""
        done = [t for t in self.claimed() if t <= committed]
        if not done:
            return 0
        pipe = self.r.pipeline(transaction=False)
        for t in done:
            pipe.delete(self.claim_key(t))
        pipe.hdel(self.claims_key, *[str(t) for t in done])
        pipe.execute()
        return len(done)
