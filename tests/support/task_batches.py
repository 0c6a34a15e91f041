"""One legacy bolt task run batch after batch as a Spark task runs it, on real Redis.

``taskstate.open_task`` finds (or restores, or catches up) the live instance in a worker's
``TaskCache``, the bolt processes the batch, its snapshot goes out through the real Lua
scripts, and the batch is committed: what ``tests/test_state_catch_up.py`` and
``tests/test_state_shadow.py`` switch between "workers" (caches) and compare with a run that
never switched and with a fresh instance built from the stored state."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

from stormshift.engines.spark.task.taskstate import (
    TaskCache,
    open_task,
    snapshot_of,
    snapshot_written,
)
from stormshift.state.component import build, state_of
from stormshift.state.connection import run_scripts
from stormshift.state.fencing import acquire_epoch
from stormshift.state.snapshots import SnapshotStore, written_head
from support.state_fixtures import commit

__all__ = ["TASK", "bound_to", "fresh", "host_class", "run_batch", "same_state", "switching_batches"]

TASK = ("ns", "bolt", 0, "config")


def host_class(bolt_class: type) -> type:
    """A host of ``bolt_class`` as ``open_task`` makes them: ``instance`` and ``open()``."""

    class Host:
        def __init__(self) -> None:
            self.instance = bolt_class()

        def open(self) -> None:
            self.instance.initialize()

    return Host


def same_state(a: Any, b: Any) -> None:
    """The two instances hold equal state attributes, dicts in the same key order."""
    sa, sb = state_of(a), state_of(b)
    assert list(sa) == list(sb)
    for name in sa:
        assert sa[name] == sb[name], name
        if isinstance(sa[name], dict):
            assert list(sa[name]) == list(sb[name]), f"{name}: key order"


def run_batch(r: Any, ns: str, store: SnapshotStore, cache: TaskCache, txid: int,
              rng: random.Random, host: type, committed: bool = True) -> tuple[Any, str]:
    """One attempt of the task at ``txid`` on the worker that owns ``cache``: the live host
    and how ``open_task`` got it (its ``process(rng, txid)`` ran)."""
    epoch = acquire_epoch(r, ns, "bolt", 0)
    live, how = open_task(TASK, txid, epoch, cache, host,
                          lambda: store.load("bolt", 0, txid),
                          lambda version, head: store.load_since("bolt", 0, txid, version, head))
    live.instance.process(rng, txid)
    payload, kind, prev = snapshot_of(live, txid)
    ops = store.ops("bolt", 0, txid, epoch, payload, kind, prev)
    run_scripts(r, ops)
    snapshot_written(live, txid, written_head(ops[0][2][-1]))
    cache.put(TASK, live, txid, epoch)
    if committed:
        commit(r, ns, txid)
    return live, how


def fresh(bolt_class: type, store: SnapshotStore, txid: int) -> Any:
    """A new instance built from the state stored for batch ``txid``."""
    bolt = bolt_class()
    bolt.initialize()
    build(bolt, store.load("bolt", 0, txid))
    return bolt


def bound_to(bolt_class: type) -> tuple[type, Callable[..., tuple[Any, str]],
                                        Callable[[SnapshotStore, int], Any]]:
    """``(Host, batch, fresh)`` for one bolt class: its host class, :func:`run_batch` and
    :func:`fresh` with the class filled in."""
    host = host_class(bolt_class)

    def batch(r: Any, ns: str, store: SnapshotStore, cache: TaskCache, txid: int,
              rng: random.Random, committed: bool = True) -> tuple[Any, str]:
        return run_batch(r, ns, store, cache, txid, rng, host, committed)

    def fresh_from(store: SnapshotStore, txid: int) -> Any:
        return fresh(bolt_class, store, txid)

    return host, batch, fresh_from


def switching_batches(r: Any, ns: str, store: SnapshotStore, bound: tuple[Any, Any, Any],
                      seed: int, batches: int) -> Iterator[tuple[Any, str]]:
    """Batches ``1..batches`` of the task, each on one of two workers' caches (picked by
    ``seed``), each checked against the same batches on one worker that never switches and
    against a fresh instance built from the stored state; yields ``(host, how)``."""
    host_cls, batch, fresh_from = bound
    workers = [TaskCache(), TaskCache()]
    pick = random.Random(seed)
    reference = host_cls()
    reference.open()
    for txid in range(1, batches + 1):
        host, how = batch(r, ns, store, pick.choice(workers), txid,
                          random.Random(txid * 7919 + seed))
        reference.instance.process(random.Random(txid * 7919 + seed), txid)
        same_state(host.instance, reference.instance)
        same_state(host.instance, fresh_from(store, txid + 1))
        yield host, how
