"""State-layer benchmark: opaque-map increments committed per second from one task.

Each batch is one task attempt exactly as the engine runs it: ``acquire_epoch``,
a ``TaskScope`` in which a loop calls ``counts.increment(key, 1)`` (the bolt's
work), the scope's flush (one pipelined round of EVALSHA), then the driver's
``record_commit``. Batches hold ``--keys`` distinct keys (default 100,000),
each incremented ``--per-key`` times. Prints increments/s (end to end,
including the Python loop), batch duration p50/p99, Redis round trips per
task per batch for several key counts, Redis memory per key for each map
kind, and the Python process's peak RSS. Usage::

    python bench/state_bench.py [--url redis://127.0.0.1:6379/0] [--batches 8]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
import uuid

import redis

from stormshift.state import opaque_map, plain_map, transactional_map
from stormshift.state.commit import CommitLog, reset_namespace
from stormshift.state.fencing import acquire_epoch
from stormshift.state.keys import epochs_key
from stormshift.state.scope import TaskScope


def one_batch(r, ns: str, txid: int, keys: list, per_key: int, handle) -> tuple[float, TaskScope]:
    t0 = time.perf_counter()
    epoch = acquire_epoch(r, ns, "counter", 0)
    with TaskScope(r, ns, "counter", 0, txid, epoch) as scope:
        inc = handle.increment
        for _ in range(per_key):
            for k in keys:
                inc(k, 1)
    CommitLog(r, ns).record_commit(txid)
    return time.perf_counter() - t0, scope


def throughput(r, keys_n: int, per_key: int, batches: int) -> None:
    ns = "bench" + uuid.uuid4().hex[:8]
    counts = opaque_map("ctr")
    keys = [f"ad-{i:07d}" for i in range(keys_n)]
    try:
        one_batch(r, ns, 0, keys, per_key, counts)  # warm-up: creates the keys, loads scripts
        secs = [one_batch(r, ns, t, keys, per_key, counts)[0] for t in range(1, batches + 1)]
    finally:
        cleanup(r, ns)
    incs = keys_n * per_key
    total = sum(secs)
    p50 = statistics.median(secs) * 1000
    p99 = sorted(secs)[min(len(secs) - 1, int(0.99 * len(secs)))] * 1000
    print(
        f"opaque increments: {keys_n:>7} distinct keys x {per_key:>2} per key per batch: "
        f"{incs * batches / total:>10,.0f} increments/s committed "
        f"({keys_n * batches / total:,.0f} keys/s), batch p50 {p50:.0f} ms p99 {p99:.0f} ms"
    )


def round_trips(r) -> None:
    ns = "bench" + uuid.uuid4().hex[:8]
    counts = opaque_map("ctr")
    try:
        for txid, n in enumerate((10, 1_000, 100_000)):
            _, scope = one_batch(r, ns, txid, list(range(n)), 1, counts)
            s = scope.stats
            trips = 2 + s.read_round_trips + s.flush_round_trips  # acquire_epoch (2) + reads + flush
            print(
                f"round trips per task per batch with {n:>7} keys: {trips} "
                f"(acquire_epoch 2, reads {s.read_round_trips}, flush {s.flush_round_trips}; "
                f"{s.script_calls} EVALSHA calls in the flush)"
            )
    finally:
        cleanup(r, ns)


def memory_per_key(r, n: int) -> None:
    for kind, make in (("opaque", opaque_map), ("transactional", transactional_map), ("plain", plain_map)):
        ns = "bench" + uuid.uuid4().hex[:8]
        m = make("mem")
        try:
            one_batch(r, ns, 0, [], 1, m)  # fences exist before we measure
            before = r.info("memory")["used_memory"]
            one_batch(r, ns, 1, [f"ad-{i:07d}" for i in range(n)], 1, m)
            one_batch(r, ns, 2, [f"ad-{i:07d}" for i in range(n)], 1, m)  # opaque: prev and curr set
            after = r.info("memory")["used_memory"]
        finally:
            cleanup(r, ns)
        print(f"memory per key, {kind:>13} map: {(after - before) / n:6.1f} bytes "
              f"(key 'ad-NNNNNNN', int value, {n:,} keys)")


def cleanup(r, ns: str) -> None:
    reset_namespace(r, ns, keep_fences=False)
    r.delete(epochs_key(ns))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default="redis://127.0.0.1:6379/0")
    ap.add_argument("--keys", type=int, default=100_000)
    ap.add_argument("--batches", type=int, default=8)
    args = ap.parse_args()
    r = redis.Redis.from_url(args.url)
    print(f"redis {r.info('server')['redis_version']} at {args.url}")
    for per_key in (1, 10):
        throughput(r, args.keys, per_key, args.batches)
    round_trips(r)
    memory_per_key(r, args.keys)
    print(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
