"""A windowed bolt task's state per batch: Redis round trips, bytes, and the cost of a firing.

1. **Round trips and bytes.** One windowed bolt task (a ``WindowingState`` with
   ``--keys`` keys, one open window each, an incremental aggregation) runs batches
   exactly as a Spark task commits them (``TaskTxn``: epoch, the ``Snapshotter``'s
   payload, counters, one pipelined fenced round, then the driver's commit), its
   live state reused between batches. Per batch it touches 10 or 10,000 windows
   (each gets a tuple), or lets the watermark expire 10 or 10,000 of them. Round
   trips are counted on the client (``task_round_trips.RoundTrips``: every first
   reply after a send); bytes are the snapshot version written. Ratios: 10,000 /
   10 windows.
2. **The cost of a firing.** ``--windows`` windows each holding 1 or ``--tuples``
   tuples fire together (one ``advance``) and are written (the delta of the batch):
   per firing, with ``Count`` (incremental: init/add/merge/result) and with
   ``Collect`` (the window's tuples) for contrast. Ratio: big / small windows.

    python bench/windowed_state.py [--keys 20000] [--windows 200] [--tuples 2000] [--redis URL]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))

from task_round_trips import RoundTrips

from stormshift.state.component import Snapshotter
from stormshift.windows import Collect, Count, Windowing
from stormshift.windows.state import WindowingState

PARTS = [("src", "default", 0)]
LATENESS_MS = 5


class Task:
    def __init__(self, ws: WindowingState) -> None:
        self.windowing_state = ws


def _state(aggregation: Any) -> WindowingState:
    w = (Windowing.tumbling(duration_ms=1_000).with_timestamp_field("t")
         .with_allowed_lateness(LATENESS_MS).with_aggregation(aggregation))
    return WindowingState.build(w, PARTS)


def _commit(r: Any, ns: str, store: Any, task: Task, snap: Snapshotter, txid: int,
            counter: RoundTrips) -> tuple[int, int, str]:
    """One task attempt + the driver's commit; (round trips of the task, bytes, kind)."""
    from stormshift.state.commit import CommitLog
    from stormshift.state.task_txn import TaskTxn

    before = counter.n
    with counter.counting():
        txn = TaskTxn(r, ns, "windows", 0, txid, store)
        txn.begin()
        payload, kind, prev = snap.payload(task, txid)
        txn.snapshot(payload, kind, prev)
        txn.counters(b"{}")
        txn.commit()
    snap.written(task, txid)
    CommitLog(r, ns).record_commit(txid)
    return counter.n - before, len(payload), kind


def round_trips(url: str, keys: int, batches: int) -> dict[str, tuple[float, float]]:
    """Per scenario: (median round trips per batch, median bytes per batch)."""
    import redis

    from stormshift.state.commit import reset_namespace
    from stormshift.state.keys import epochs_key
    from stormshift.state.snapshots import SnapshotStore

    r = redis.Redis.from_url(url)
    out: dict[str, tuple[float, float]] = {}
    counter = RoundTrips()
    for name, touched, expire in (("touch 10", 10, False), ("touch 10,000", 10_000, False),
                                  ("expire 10", 10, True), ("expire 10,000", 10_000, True)):
        ns = "bench-ws-" + uuid.uuid4().hex[:10]
        store = SnapshotStore(r, ns, b"bench-key")
        ws = _state(Count())
        assert ws.windower is not None
        task, snap = Task(ws), Snapshotter()
        try:
            # every key gets a window; expiring ones at [0, 1000), the rest far ahead
            for i in range(keys):
                t = (i // touched) * 1_000 if expire else 10**9
                ws.windower.add(f"k{i:06d}", t, None, 0)
            _commit(r, ns, store, task, snap, 1, counter)
            trips, sizes = [], []
            for b in range(batches):
                if expire:  # the watermark expires the next ``touched`` windows
                    ws.windower.advance((b + 1) * 1_000 + LATENESS_MS, 0)
                else:
                    for i in range(touched):
                        ws.windower.add(f"k{(b * 7 + i) % keys:06d}", 10**9, None, 0)
                n, size, kind = _commit(r, ns, store, task, snap, 2 + b, counter)
                if kind == "delta":
                    trips.append(n)
                    sizes.append(size)
            out[name] = (statistics.median(trips), statistics.median(sizes))
        finally:
            reset_namespace(r, ns, keep_fences=False)
            r.delete(epochs_key(ns))
    return out


def firing(windows: int, tuples: int, aggregation: Any, repeat: int = 5) -> tuple[float, float]:
    """(µs per firing, bytes per fired window written) for windows of ``tuples`` tuples."""
    times, sizes = [], []
    for _ in range(repeat):
        ws = _state(aggregation)
        assert ws.windower is not None
        for w in range(windows):
            for i in range(tuples):
                ws.windower.add(f"k{w}", 10, ("v", i), 0)
        snap, task = Snapshotter(), Task(ws)
        snap.payload(task, 1)
        snap.written(task, 1)
        t0 = time.perf_counter()
        fired = ws.windower.advance(1_000, 0)  # ON_TIME, not final: the windows stay
        payload, kind, _ = snap.payload(task, 2)
        times.append((time.perf_counter() - t0) / windows * 1e6)
        assert len(fired) == windows and kind == "delta"
        sizes.append(len(payload) / windows)
    return statistics.median(times), statistics.median(sizes)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--keys", type=int, default=60_000)
    p.add_argument("--batches", type=int, default=5)
    p.add_argument("--windows", type=int, default=200)
    p.add_argument("--tuples", type=int, default=2_000)
    p.add_argument("--redis", default="redis://127.0.0.1:6379")
    args = p.parse_args(argv)
    print(f"1. one windowed bolt task, {args.keys:,} keys with an open window (Count), "
          f"{args.batches} batches each")
    rt = round_trips(args.redis, args.keys, args.batches)
    for name, (trips, size) in rt.items():
        print(f"   {name:>14} windows per batch: {trips:4.0f} round trips, {size:>10,.0f} bytes")
    for what in ("touch", "expire"):
        big, small = rt[f"{what} 10,000"], rt[f"{what} 10"]
        print(f"   {what}: round trips 10,000 / 10 windows = {big[0] / small[0]:.2f}; "
              f"bytes {big[1] / small[1]:.0f}x for 1,000x the windows")
    print(f"2. {args.windows} windows fire at once (ON_TIME), then the batch's delta is built")
    for agg in (Count(), Collect()):
        small = firing(args.windows, 1, agg)
        big = firing(args.windows, args.tuples, agg)
        print(f"   {type(agg).__name__:>7}: per firing {small[0]:7.1f} µs / {small[1]:>8,.0f} B "
              f"(1 tuple), {big[0]:7.1f} µs / {big[1]:>8,.0f} B ({args.tuples:,} tuples): "
              f"ratio {big[0] / small[0]:.2f} time, {big[1] / small[1]:.2f} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
