"""Snapshot cost per batch as a legacy bolt's state grows (incremental snapshots).

A bolt task holding ``Counter`` state of N keys runs batches exactly as a Spark
task commits them (``TaskTxn``: epoch, snapshot payload from the task's
``Snapshotter``, counters, one pipelined fenced round, then the driver's
``record_commit``), with its live instance reused between batches as the
engine does. Per size it prints the median duration and the bytes of snapshot
written per batch for empty batches and for batches changing 100 keys, the
one-off cost of a base (first batch, and each compaction), and the cost of the
old whole-state pickling for comparison, and what tracking adds to one
``counts[w] += 1``; then the ratios of the largest size
to the smallest (target: empty-batch time and bytes within 1.5x). Usage::

    python bench/state_growth.py [--sizes 1000,10000000] [--batches 15] [--url redis://...]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
import uuid
from collections import Counter

import redis
from pyspark import cloudpickle

from stormshift.engines.spark.task.taskstate import snapshot_of, snapshot_written
from stormshift.state.commit import CommitLog, reset_namespace
from stormshift.state.component import build
from stormshift.state.keys import epochs_key
from stormshift.state.snapshots import SnapshotStore
from stormshift.state.task_txn import TaskTxn

HMAC = b"bench-key"
CHANGED = 100  # keys a "small" batch changes


class Bolt:
    """A word-count bolt's instance: its state is one Counter (and a scalar)."""

    def __init__(self, n: int):
        self.counts = Counter({f"word-{i:09d}": 1 for i in range(n)})
        self.batches = 0


class _Host:
    def __init__(self, instance: Bolt):
        self.instance = instance


def one_batch(r, ns: str, store: SnapshotStore, host: _Host, txid: int,
              change: list[str]) -> tuple[float, int, str]:
    """One task attempt + commit; returns (seconds, snapshot bytes, kind)."""
    t0 = time.perf_counter()
    bolt = host.instance
    for w in change:  # the bolt's process() for this batch's tuples
        bolt.counts[w] += 1
    bolt.batches += 1
    txn = TaskTxn(r, ns, "counter", 0, txid, store)
    txn.begin()
    payload, kind, prev = snapshot_of(host, txid)
    txn.snapshot(payload, kind, prev)
    txn.counters(b"{}")
    txn.commit()
    snapshot_written(host, txid)
    CommitLog(r, ns).record_commit(txid)
    return time.perf_counter() - t0, len(payload), kind


def measure(r, n: int, batches: int) -> dict[str, float]:
    ns = "grow" + uuid.uuid4().hex[:8]
    store = SnapshotStore(r, ns, HMAC)
    host = _Host(Bolt(n))
    build(host.instance, None)  # a fresh task: initialize(), nothing to restore
    keys = list(host.instance.counts)
    try:
        base_s, base_b, kind = one_batch(r, ns, store, host, 1, [])
        assert kind == "base"
        empty = [one_batch(r, ns, store, host, t, []) for t in range(2, 2 + batches)]
        step = max(1, len(keys) // CHANGED)
        touched = keys[::step][:CHANGED]
        small = [one_batch(r, ns, store, host, t, touched)
                 for t in range(2 + batches, 2 + 2 * batches)]
        compactions = sum(k == "base" for _, _, k in empty + small)
        t0 = time.perf_counter()  # what every batch paid before: the whole state pickled
        whole = len(cloudpickle.dumps({"counts": host.instance.counts, "batches": 0}))
        whole_s = time.perf_counter() - t0
    finally:
        reset_namespace(r, ns, keep_fences=False)
        r.delete(epochs_key(ns))
    out = {
        "base_s": base_s, "base_b": base_b, "whole_pickle_s": whole_s, "whole_b": whole,
        "empty_s": statistics.median(s for s, _, _ in empty),
        "empty_b": statistics.median(b for _, b, _ in empty),
        "small_s": statistics.median(s for s, _, _ in small),
        "small_b": statistics.median(b for _, b, _ in small),
        "compactions": compactions,
    }
    print(f"{n:>11,} keys: empty batch {out['empty_s'] * 1000:7.2f} ms {out['empty_b']:>6,.0f} B | "
          f"{CHANGED} keys changed {out['small_s'] * 1000:7.2f} ms {out['small_b']:>7,.0f} B | "
          f"base (first batch, compaction) {base_s:7.2f} s {base_b / 1e6:8.1f} MB | "
          f"whole-state pickle per batch before: {whole_s:6.2f} s {whole / 1e6:8.1f} MB | "
          f"compactions {compactions} of {2 * batches} batches")
    return out


def update_cost(n: int = 1_000_000) -> None:
    """What tracking adds to the bolt's own ``counts[w] += 1`` (ns per update)."""
    from stormshift.state.tracked import track

    words = [f"word-{i % 50_000:09d}" for i in range(n)]
    out = []
    for counts in (Counter(), track(Counter())):
        t0 = time.perf_counter()
        for w in words:
            counts[w] += 1
        out.append((time.perf_counter() - t0) / n * 1e9)
    print(f"counts[w] += 1: plain Counter {out[0]:.0f} ns, tracked {out[1]:.0f} ns "
          f"(+{out[1] - out[0]:.0f} ns per update)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default="redis://127.0.0.1:6379/0")
    ap.add_argument("--sizes", default="1000,10000000")
    ap.add_argument("--batches", type=int, default=15)
    ap.add_argument("--updates", choices=["plain", "tracked"],
                    help="only loop counts[w] += 1 --n times (run under callgrind, minus --n 0)")
    ap.add_argument("--n", type=int, default=100_000)
    args = ap.parse_args()
    if args.updates:
        from stormshift.state.tracked import track

        counts = track(Counter()) if args.updates == "tracked" else Counter()
        for i in range(args.n):
            counts[f"word-{i % 50_000:09d}"] += 1
        return
    r = redis.Redis.from_url(args.url)
    sizes = [int(s) for s in args.sizes.split(",")]
    results = {n: measure(r, n, args.batches) for n in sizes}
    lo, hi = results[sizes[0]], results[sizes[-1]]
    print(f"ratio {sizes[-1]:,} / {sizes[0]:,} keys: empty batch time x{hi['empty_s'] / lo['empty_s']:.2f}, "
          f"bytes x{hi['empty_b'] / lo['empty_b']:.2f}; {CHANGED}-key batch time "
          f"x{hi['small_s'] / lo['small_s']:.2f}, bytes x{hi['small_b'] / lo['small_b']:.2f} "
          "(target: empty batch within x1.5)")
    update_cost()
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB")


if __name__ == "__main__":
    main()
