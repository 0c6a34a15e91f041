"""TaskTxn: everything ONE task attempt writes for one batch, committed in one fenced round.

Words: an *attempt* is one execution of task ``task`` of ``component`` for
txid ``txid`` (a Spark retry, a speculative copy and a zombie are all
attempts); its *epoch* fences every earlier attempt (``state/fencing.py``).
Call order, one step each (``Status`` refuses a call in the wrong state):

1. ``begin``: take a new epoch (fencing every older attempt of the task);
2. ``restore_point``: the task's snapshot as of the newest committed txid below ``txid``;
3. ``scope``: the ``TaskScope`` the batch runs in; its map writes are buffered, not sent;
4. ``snapshot``: the task's state at ``txid`` (payload format: ``state/snapshots.py``);
5. ``dead_letter``: each tuple the attempt dead-letters;
6. ``sink``: its leaf emits for a ``redis:`` sink, guarded by the sink marker
   (``state/sinkstream.py``);
7. ``counters``: its counters record for the engine's driver (an opaque blob in
   ``keys.stats_key``; the engine reads it: ``engines/spark/records/batchstats.py``);
8. ``commit``: steps 3-7 as ONE pipelined round of EVALSHA calls, in that order.

The idempotence rule (the one rule for all of them): every write of attempt
``(txid, epoch)`` is fenced -- refused (``FencedError``) if a newer epoch of
the task exists or ``txid`` is at or below the committed txid -- and lands
under a name keyed by ``txid``, so that a later attempt of the same txid
replaces it or finds it there instead of adding to it: a map record carries
its txid (transactional: skipped, opaque: recomputed from ``prev``), a
snapshot is version ``txid``, a dead letter is keyed by its tuple id
``txid:task:n``, the sink marker and the counters field are per (txid,
component, task). A leaf file of a ``jsonl:`` sink is named by (txid, task)
and renamed into place by the caller after ``commit`` returns, so a fenced
attempt writes none. Plain maps (``plain_map``) are at-least-once by design.

The round is pipelined, not atomic: a successor that takes its epoch during
the round (or a commit recorded during it) can leave part of it written. The
namespace-wide calls (dead letters, sink, counters) check the epoch counter
and the commit record, which move before any group's copy of them does, so
if the snapshot (or any earlier call) of the round was refused, they are too
(calls run in order on one server; a cluster runs one round per node):
dead letters never land without the snapshot before them. Whatever part
landed, the successor's commit of the same txid replaces it (the rule).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

from stormshift.errors import StateError
from stormshift.state import keys as K
from stormshift.state.client import Redis
from stormshift.state.connection import Call, run_scripts
from stormshift.state.deadletter import entry, fenced_add_call
from stormshift.state.fencing import acquire_epoch
from stormshift.state.scope import TaskScope
from stormshift.state.sinkstream import sink_call
from stormshift.state.snapshots import written_head

__all__ = ["STATS_TTL_SECS", "Status", "TaskTxn", "stats_call"]

STATS_TTL_SECS = 86400  # a batch's counters records, if its driver never reads them


def stats_call(namespace: str, epoch: int, txid: int, who: str, field: str, record: bytes) -> Call:
    """The fenced script call writing one task's counters record of ``txid`` (pure)."""
    keys = [K.epochs_key(namespace), K.commit_key(namespace), K.stats_key(namespace, txid)]
    return ("stats_put", keys, [epoch, txid, who, STATS_TTL_SECS, field, record])


class Status(enum.Enum):
    NEW = "new"  # made, no epoch yet
    OPEN = "open"  # epoch taken: reads, buffered writes
    COMMITTED = "committed"
    ABORTED = "aborted"  # dropped (a redo, an error): nothing was sent


class TaskTxn:
    """One attempt of (``component``, ``task``) at ``txid`` (module doc: steps and rule)."""

    def __init__(self, r: Redis, namespace: str, component: str, task: int, txid: int,
                 snapshots: Any):
        self.r = r
        self.namespace = K.check_name("namespace", namespace)
        self.component, self.task, self.txid = component, task, txid
        self.snapshots = snapshots  # a state.snapshots.SnapshotStore of the namespace
        self.who = K.who(component, task)
        self.status = Status.NEW
        self.epoch = -1
        self._scope: TaskScope | None = None
        self._maps: list[Call] | None = None  # the scope's calls, once sealed
        self._snapshot: list[Call] = []
        self.snapshot_head = b""  # what identifies the version step 4 writes (a live catch-up)
        self._letters: list[Call] = []
        self._sink: list[Call] = []
        self._counters: list[Call] = []

    def _need(self, status: Status, step: str) -> None:
        if self.status is not status:
            raise StateError(f"component {self.component!r} task {self.task} txid {self.txid}: "
                             f"{step} called on a {self.status.value} task transaction")

    # Step 1.
    def begin(self) -> int:
        """Take a new epoch (``acquire_epoch``); returns it."""
        self._need(Status.NEW, "begin")
        self.epoch = acquire_epoch(self.r, self.namespace, self.component, self.task)
        self.status = Status.OPEN
        return self.epoch

    # Step 2.
    def restore_point(self) -> Any:
        """The task's verified snapshot below ``txid`` (``SnapshotStore.load``), or None."""
        self._need(Status.OPEN, "restore_point")
        return self.snapshots.load(self.component, self.task, self.txid)

    def catch_up_point(self, since: int, head: bytes) -> Any:
        """Step 2 for a live instance holding version ``since`` (it wrote ``head`` there):
        the verified deltas after it (``SnapshotStore.load_since``), or None."""
        self._need(Status.OPEN, "catch_up_point")
        return self.snapshots.load_since(self.component, self.task, self.txid, since, head)

    # Step 3.
    def scope(self) -> TaskScope:
        """The batch's ``TaskScope`` (enter it around the batch); writes wait for ``commit``."""
        self._need(Status.OPEN, "scope")
        if self._scope is not None:
            raise StateError(f"component {self.component!r} task {self.task}: one scope per "
                             "task transaction; a redo opens a new transaction")
        self._scope = TaskScope(self.r, self.namespace, self.component, self.task, self.txid,
                                self.epoch, defer_flush=True)
        return self._scope

    # Step 4.
    def snapshot(self, payload: bytes, *how: Any) -> None:
        """The task's state at ``txid``; ``how`` goes to ``SnapshotStore.ops`` as is."""
        self._need(Status.OPEN, "snapshot")
        self._snapshot = self.snapshots.ops(self.component, self.task, self.txid, self.epoch,
                                            payload, *how)
        self.snapshot_head = written_head(self._snapshot[0][2][-1])  # the blob's head

    # Step 5.
    def dead_letter(self, stream: str, values: Any, error: str, traceback: str, *,
                    source: str | None, tuple_key: str, reason: str) -> None:
        """One dead-lettered tuple (``state/deadletter.py`` says what an entry holds)."""
        self._need(Status.OPEN, "dead_letter")
        digest, fields = entry(self.component, stream, values, error, traceback, self.txid,
                               source=source, tuple_key=tuple_key, task=self.task, reason=reason)
        self._letters.append(fenced_add_call(self.namespace, self.epoch, self.txid, self.who,
                                             digest, fields))

    # Step 6.
    def sink(self, stream_key: str, leaves: Sequence[tuple[str, Any]]) -> None:
        """Leaf emits ``(stream, values)`` for the Redis stream ``stream_key``."""
        self._need(Status.OPEN, "sink")
        self._sink = [sink_call(self.namespace, self.epoch, self.txid, self.component, self.task,
                                stream_key, leaves)] if leaves else []

    # Step 7.
    def counters(self, record: bytes) -> None:
        """The task's counters record of ``txid`` (field ``component:task``)."""
        self._need(Status.OPEN, "counters")
        self._counters = [stats_call(self.namespace, self.epoch, self.txid, self.who, self.who,
                                     record)]

    def map_bytes(self) -> int:
        """Bytes of the keyed-map writes the commit will send (packed keys and values),
        so a task's "state bytes written" counts its maps, not only its snapshot. Seals
        the scope (call it after the batch ran, before ``counters``)."""
        self._need(Status.OPEN, "map_bytes")
        return sum(len(a) for _, _, args in self._sealed_maps() for a in args[4:]
                   if isinstance(a, (bytes, str)))

    def _sealed_maps(self) -> list[Call]:
        maps = self._maps
        if maps is None:
            maps = self._maps = list(self._scope.seal()) if self._scope is not None else []
        return maps

    # Step 8.
    def calls(self) -> list[Call]:
        """Every call of the commit, in step order (pure; seals the scope)."""
        self._need(Status.OPEN, "calls")
        return [*self._sealed_maps(), *self._snapshot, *self._letters, *self._sink,
                *self._counters]

    def commit(self) -> None:
        """Send every write in one pipelined round; FencedError if this attempt is stale."""
        calls = self.calls()
        try:
            run_scripts(self.r, calls)
        except Exception as e:
            self.status = Status.ABORTED
            where = f"component {self.component!r} task {self.task} txid {self.txid} epoch {self.epoch}"
            if e.args and isinstance(e.args[0], str) and not e.args[0].startswith("component "):
                e.args = (f"{where}: {e.args[0]}", *e.args[1:])
            raise
        self.status = Status.COMMITTED

    def abort(self) -> None:
        """Drop everything collected; nothing was sent."""
        if self._scope is not None:
            self._scope.discard()
        self.status = Status.ABORTED

