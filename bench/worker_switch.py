"""A legacy bolt's task whose batches alternate between two Python workers, as Spark runs it.

Spark gives a stage's task to whichever Python worker is idle, so a task's live
instance is often in the other worker. Each worker keeps its own ``TaskCache``;
every batch opens the task through ``taskstate.open_task`` exactly as a Spark task
does (``TaskTxn``: epoch, restore or catch-up, the bolt's update of ``--changed``
keys, snapshot, fenced commit round, ``record_commit``), alternating workers A, B,
A, B, ... Two modes in the same run, per state size: ``catch-up`` (a worker's stale
instance reads the deltas since its own version: ``SnapshotStore.load_since``) and
``restore`` (no catch-up: every switch restores the whole state, as before). Prints
per size and mode the median batch time and bytes read from Redis per batch, then
the ratios catch-up / restore and largest / smallest size. Usage::

    python bench/worker_switch.py [--sizes 1000,1000000,10000000] [--batches 8]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
import uuid
from collections import Counter
from typing import Any

import redis

from stormshift.engines.spark.task.taskstate import (
    TaskCache,
    open_task,
    snapshot_of,
    snapshot_written,
)
from stormshift.state.commit import CommitLog, reset_namespace
from stormshift.state.keys import epochs_key
from stormshift.state.snapshots import SnapshotStore
from stormshift.state.task_txn import TaskTxn

HMAC = b"bench-key"


class Bolt:
    """A word-count bolt: ``initialize()`` makes an empty ``Counter``."""

    def initialize(self) -> None:
        self.counts: Counter[str] = Counter()


class Host:
    def __init__(self) -> None:
        self.instance = Bolt()

    def open(self) -> None:
        self.instance.initialize()


def one_batch(r: Any, ns: str, store: SnapshotStore, cache: TaskCache, txid: int, words: list[str],
              catch_up: bool, read: list[int]) -> tuple[float, str]:
    """One task attempt on the worker owning ``cache``; returns (seconds, how it opened)."""
    t0 = time.perf_counter()
    txn = TaskTxn(r, ns, "counter", 0, txid, store)
    epoch = txn.begin()

    def load() -> Any:
        point = txn.restore_point()
        read.append(0 if point is None else len(point.base) + point.delta_bytes)
        return point

    def load_since(version: int, head: bytes) -> Any:
        point = txn.catch_up_point(version, head)
        read.append(0 if point is None else point.delta_bytes)
        return point

    host, how = open_task(("bench", "counter", 0, ""), txid, epoch, cache, Host, load,
                          load_since if catch_up else None)
    counts = host.instance.counts
    for w in words:  # the bolt's process() for this batch's tuples
        counts[w] += 1
    txn.snapshot(*snapshot_of(host, txid))
    txn.counters(b"{}")
    txn.commit()
    snapshot_written(host, txid, txn.snapshot_head)
    cache.put(("bench", "counter", 0, ""), host, txid, epoch)
    CommitLog(r, ns).record_commit(txid)
    return time.perf_counter() - t0, how


def measure(r: Any, n: int, batches: int, changed: int, catch_up: bool) -> dict[str, Any]:
    ns = "switch" + uuid.uuid4().hex[:8]
    store = SnapshotStore(r, ns, HMAC)
    workers = [TaskCache(), TaskCache()]
    read: list[int] = []
    try:
        # batch 1 on A makes the state (a base), batch 2 on B restores it whole (its first)
        one_batch(r, ns, store, workers[0], 1, [f"word-{i:09d}" for i in range(n)], catch_up, read)
        one_batch(r, ns, store, workers[1], 2, [], catch_up, read)
        runs = []
        for i in range(batches):
            words = [f"word-{(i * 7919 + j * 104729) % n:09d}" for j in range(changed)]
            read.clear()
            seconds, how = one_batch(r, ns, store, workers[i % 2], 3 + i, words, catch_up, read)
            runs.append((seconds, how, sum(read)))
    finally:
        reset_namespace(r, ns, keep_fences=False)
        r.delete(epochs_key(ns))
    hows = Counter(how for _, how, _ in runs)
    return {"s": statistics.median(s for s, _, _ in runs),
            "read_b": statistics.median(b for _, _, b in runs), "hows": dict(sorted(hows.items()))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default="redis://127.0.0.1:6379/0")
    ap.add_argument("--sizes", default="1000,1000000,10000000")
    ap.add_argument("--batches", type=int, default=8, help="switched batches measured per mode")
    ap.add_argument("--changed", type=int, default=100, help="keys each batch updates")
    args = ap.parse_args()
    r = redis.Redis.from_url(args.url)
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[tuple[int, bool], dict[str, Any]] = {}
    for n in sizes:
        for catch_up in (True, False):
            res = results[(n, catch_up)] = measure(r, n, args.batches, args.changed, catch_up)
            mode = "catch-up" if catch_up else "restore "
            print(f"{n:>11,} keys, {mode}: batch {res['s'] * 1000:9.2f} ms, read "
                  f"{res['read_b']:>13,.0f} B per batch ({res['hows']})", flush=True)
        c, w = results[(n, True)], results[(n, False)]
        print(f"{'':>11}  catch-up / restore: time x{c['s'] / w['s']:.3g}, "
              f"bytes read x{c['read_b'] / max(w['read_b'], 1):.3g}", flush=True)
    lo, hi = results[(sizes[0], True)], results[(sizes[-1], True)]
    print(f"catch-up, {sizes[-1]:,} / {sizes[0]:,} keys: batch time x{hi['s'] / lo['s']:.2f}, "
          f"bytes read x{hi['read_b'] / max(lo['read_b'], 1):.2f}")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB")


if __name__ == "__main__":
    main()
