"""A hosted bolt task on Spark: which live instance serves batch N, and its fencing.

A bolt task for batch *N* is a pure function of (its state committed at *N-1*, its
input of *N*). What that state is, how it is snapshotted, built and caught up is
engine-neutral (``state/component``); this module is the Spark shell around it. For
batch *N* a task:

1. takes a new epoch for (component, task) -- every older attempt is fenced;
2. reuses the live instance kept in this Python worker (``TaskCache``) if it holds the
   state of a txid below *N* written under epoch *e-1* (no other attempt ran in
   between: the batches after it skipped the task as idle); or, when it holds an older
   version *v* that it wrote itself (the head it wrote is still there) and the restore
   point below *N* is *v* plus deltas, applies those deltas to it (``catch_up``: Spark
   gives a task to whichever Python worker is idle, and a worker that ran the task a
   few batches ago reads what changed since, not the whole state); else builds a fresh
   instance, calls ``initialize()`` (so connections are re-made) and ``build``s it from
   the restore point below *N* (``SnapshotStore.load``);
3. processes the batch;
4. snapshots its state at *N* under its epoch (``snapshot_of``; a fenced write by the
   task's transaction, ``state/task_txn.py``), then ``snapshot_written`` once the
   commit landed. A change of ``par`` re-splits dict state keyed by the fields
   grouping, or is refused (``state/rescale.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stormshift.state.component import RestorePoint, build, catch_up, held, landed, snapshot
from stormshift.topology.graph import TopologyGraph

__all__ = ["CachedTask", "TaskCache", "config_of", "open_task", "snapshot_of",
           "snapshot_written"]


def config_of(graph: TopologyGraph, comp: Any) -> str:
    """What a live instance was initialized with: a run with other config or other wiring
    (a changed par: a rescaled task holds other keys) builds a new one."""
    return repr((sorted(graph.config.items()), sorted(comp.config.items()), comp.class_path,
                 graph.wiring()))


@dataclass
class CachedTask:
    host: Any
    txid: int  # the txid whose state the live instance holds
    epoch: int  # the epoch it was written under


class TaskCache:
    """Live hosted instances of this Python worker, keyed by (namespace, component, task,
    config): an instance initialized with other config is never reused."""

    def __init__(self) -> None:
        self._tasks: dict[tuple[str, str, int, str], CachedTask] = {}

    def take(self, key: tuple[str, str, int, str]) -> CachedTask | None:
        """The live instance of ``key`` (removed: an attempt owns it until ``put``)."""
        return self._tasks.pop(key, None)

    def put(self, key: tuple[str, str, int, str], host: Any, txid: int, epoch: int) -> None:
        self._tasks[key] = CachedTask(host, txid, epoch)


def open_task(
    key: tuple[str, str, int, str],
    txid: int,
    epoch: int,
    cache: TaskCache,
    make_host: Callable[[], Any],
    load: Callable[[], RestorePoint | None],
    load_since: Callable[[int, bytes], RestorePoint | None] | None = None,
) -> tuple[Any, str]:
    """Step 2 of the module doc: ``(host, how)`` holding the state of txid-1; ``how`` is
    ``reused``, ``caught_up`` (``load_since(version, head)`` gave the deltas since the
    live instance's version), ``restored`` (built and restored from Redis) or ``started``
    (built: no state is stored below txid, a first run)."""
    cached = cache.take(key)
    if cached is not None:
        if cached.txid < txid and cached.epoch == epoch - 1:
            # No attempt of this task ran since it wrote version cached.txid, so that is
            # the restore point below txid: the batches between skipped the task
            # (``driver/waves.py``), and a batch re-run after a failure runs every task its
            # first attempt ran, taking an epoch.
            return cached.host, "reused"
        version, head = held(cached.host.instance) or (-1, b"")
        if load_since is not None and head and cached.txid < txid and version == cached.txid:
            point = load_since(version, head)
            if point is not None and catch_up(cached.host.instance, point):
                return cached.host, "caught_up"
    host = make_host()
    host.open()
    point = load()
    build(host.instance, point)
    return host, "restored" if point is not None else "started"


def snapshot_of(host: Any, txid: int) -> tuple[bytes, str, int]:
    """Step 4: the ``(payload, kind, prev)`` of ``host``'s state at ``txid``."""
    return snapshot(host.instance, txid)


def snapshot_written(host: Any, txid: int, head: bytes = b"") -> None:
    """The version ``txid`` of ``host``'s state landed (``head``: its stored head)."""
    landed(host.instance, txid, head)
