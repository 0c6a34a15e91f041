"""A ``UserSessions``-shaped windowed bolt task: batch cost at a fixed input rate, 10k vs 1M users.

adclicks' own ``user_sessions_bolt`` (sessions of 30 min, allowed lateness 4 h,
accumulating and retracting) runs as a Spark task runs it (``run_partition``:
decode, host, windows, fenced snapshot and counters in a real Redis, the
task's live instance reused between batches), fed rows as parse_bolt sends them.
A warm-up opens one session for each of ``--users`` users (in batches of
``--warm`` events); then ``--batches`` batches of ``--rate`` events each go to
users drawn at random (``--distinct``: without replacement, so a batch changes as many
keys at every size), event time moving ``--step-ms`` per batch (so sessions
extend and merge, and nothing expires). Each batch is recorded committed, as the
driver does. Prints CPU seconds per measured batch (this process; Redis's own
work not included; of which in the cyclic collector) per size, and the ratio of
the largest size to the smallest (target: <= 1.2). ``--interleave`` runs each size
in its own process and their measured batches in turns, so a shared machine's load
weighs on both sides of the ratio alike. ``--repo DIR`` runs another checkout's
stormshift (a baseline, in the same run)::

    python bench/user_sessions_scale.py [--users 10000,1000000] [--rate 10000] [--interleave]
        [--repo DIR]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import random
import statistics
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BOLT = "user_sessions_bolt"
T0_MS = 1_700_000_000_000
LAG_MS = 5_000  # the bolt's lag (examples/adclicks/src/bolts/windows.py)


def _table(layout: Any, events: list[tuple[int, int]], first_seq: int) -> Any:
    """Rows for task 0 of the bolt: its beacon, then parse_bolt task 0's tuples on
    ``events`` (``(user, ts)``), seqs from ``first_seq``."""
    import msgpack
    import pyarrow as pa

    from stormshift.engines.spark.protocol import rows as R

    graph = layout.graph
    dest = layout.first_task(BOLT)
    src = graph.component("parse_bolt").task_id(0)
    sid = layout.stream_code[("parse_bolt", "events")]
    out = R.RowBuilder()
    out.beacon(dest)
    pack = msgpack.Packer(use_bin_type=True).pack
    for n, (user, ts) in enumerate(events):
        kind = "click" if n % 10 == 0 else "impression"
        values = [n % 50, f"adv-{n % 100:03d}", f"ad-{n % 1000:04d}", kind, f"u-{user:07d}",
                  f"e-{first_seq + n}", ts, 100]
        out.add(dest, src, first_seq + n, sid, pack(values))
    return pa.Table.from_batches(list(out.batches()))


def _gc_clock() -> list[float]:
    """``[seconds]`` the cyclic collector has run in this process since installed (CPU)."""
    spent, started = [0.0], [0.0]

    def clock(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.process_time()
        else:
            spent[0] += time.process_time() - started[0]

    gc.callbacks.append(clock)
    return spent


def batches(users: int, args: argparse.Namespace) -> Iterator[dict[str, Any] | None]:
    """Run the warm-up, then yield before each measured batch (None: the caller may wait, to
    interleave sizes) and after it (its ``cpu_s``, ``wall_s``, ``gc_s``)."""
    import redis

    from stormshift.engines.spark.protocol.layout import Layout
    from stormshift.engines.spark.task.sink import SinkSpec
    from stormshift.engines.spark.task.stage import StageJob, run_partition
    from stormshift.engines.spark.task.windowing import BatchTime
    from stormshift.state.commit import CommitLog
    from stormshift.topology.loader import load_topology
    from stormshift.windows.window import START_OF_TIME_MS

    graph = load_topology(str(REPO / "examples" / "adclicks"), name="adclicks")
    layout = Layout(graph)
    stage = layout.stage_of[BOLT]
    namespace = f"bench-usess-{uuid.uuid4().hex[:12]}"
    r = redis.Redis.from_url(args.redis)
    rng = random.Random(7)
    seq, top, txid = 0, START_OF_TIME_MS, 0
    now = T0_MS
    todo: list[list[tuple[int, int]]] = []
    for lo in range(0, users, args.warm):  # warm-up: one session per user
        todo.append([(u, T0_MS + u % 60_000) for u in range(lo, min(users, lo + args.warm))])
    warm = len(todo)
    for b in range(args.batches):
        ts = T0_MS + 60_000 + (b + 1) * args.step_ms
        who = rng.sample(range(users), args.rate) if args.distinct else \
            [rng.randrange(users) for _ in range(args.rate)]
        todo.append([(u, ts + rng.randrange(args.step_ms)) for u in who])
    gc_spent = _gc_clock()
    try:
        for b, events in enumerate(todo):
            txid += 1
            now += 10_000
            wm = START_OF_TIME_MS if top == START_OF_TIME_MS else top - LAG_MS
            job = StageJob(layout, stage, txid, frozenset(), args.redis, namespace, b"bench-key",
                           SinkSpec("drop"), time=BatchTime(now, {BOLT: wm}, False))
            table = _table(layout, events, seq)
            seq += len(events)
            gc.collect()
            if args.freeze:  # the state so far out of the collector's generations
                gc.freeze()
            if b >= warm:
                yield None
            prof = args.prof if b >= warm + 1 else None
            gc_before = gc_spent[0]
            started, wall = time.process_time(), time.perf_counter()
            if prof is not None:
                prof.enable()
            list(run_partition({stage.head: job}, iter(table.to_batches(max_chunksize=1 << 16))))
            if prof is not None:
                prof.disable()
            took, wall = time.process_time() - started, time.perf_counter() - wall
            CommitLog(r, namespace).record_commit(txid)  # the driver's step 5
            top = max(top, max(ts for _, ts in events))
            if b >= warm:
                yield {"cpu_s": took, "wall_s": wall, "gc_s": gc_spent[0] - gc_before}
    finally:
        for key in r.scan_iter(match=f"*{namespace}*", count=10_000):
            r.delete(key)


def measure(users: int, args: argparse.Namespace) -> dict[str, Any]:
    """One size's measured batches, in this process, one after the other."""
    return {"users": users, "batches": [b for b in batches(users, args) if b is not None]}


def _worker(users: int, args: argparse.Namespace, conn: Any) -> None:
    """A size in its own process (``--interleave``): warm up, then run each measured batch
    when the parent says so, sending its figures back."""
    sys.path.insert(0, args.repo)
    args.prof = cProfile.Profile() if args.profile else None
    for out in batches(users, args):
        if out is None:
            conn.send("ready")
            conn.recv()
        else:
            conn.send(out)
    if args.prof is not None:
        args.prof.dump_stats(f"{args.profile}.{users}")
    conn.send("done")


def interleaved(sizes: list[int], args: argparse.Namespace) -> dict[int, list[dict[str, Any]]]:
    """Every size warmed up in its own process, then their measured batches in turns (one of
    each size, then the next): a load that drifts during the run weighs on every size alike."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    pipes, procs = {}, []
    for users in sizes:
        mine, theirs = ctx.Pipe()
        proc = ctx.Process(target=_worker, args=(users, args, theirs), daemon=True)
        proc.start()
        pipes[users] = mine
        procs.append(proc)
    out: dict[int, list[dict[str, Any]]] = {u: [] for u in sizes}
    for users in sizes:
        assert pipes[users].recv() == "ready"
    for _ in range(args.batches):
        for users in sizes:
            pipes[users].send("go")
            out[users].append(pipes[users].recv())
            msg = pipes[users].recv()
            assert msg in ("ready", "done"), msg
    for proc in procs:
        proc.join()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--users", default="10000,1000000")
    p.add_argument("--rate", type=int, default=10_000, help="events per measured batch")
    p.add_argument("--batches", type=int, default=8, help="measured batches per size")
    p.add_argument("--warm", type=int, default=100_000, help="events per warm-up batch")
    p.add_argument("--step-ms", type=int, default=10_000, help="event time per batch")
    p.add_argument("--redis", default="redis://127.0.0.1:6379")
    p.add_argument("--repo", default=str(REPO), help="the stormshift checkout to run")
    p.add_argument("--distinct", action="store_true", help="each batch's events go to "
                   "distinct users (drawn without replacement: the keys a batch changes are the "
                   "same number at every size; random draws change 63%% as many at 10k users)")
    p.add_argument("--freeze", action="store_true", help="gc.freeze() before each batch "
                   "(an experiment: what the cyclic collector's scans of the state cost)")
    p.add_argument("--interleave", action="store_true", help="each size in its own process, "
                   "warmed up, then their measured batches in turns (a drifting load on a "
                   "shared machine weighs on every size alike)")
    p.add_argument("--profile", help="cProfile of the measured batches (after the first) of "
                   "each size to FILE.<users>")
    args = p.parse_args(argv)
    sys.path.insert(0, args.repo)
    import stormshift

    print(f"stormshift from {Path(stormshift.__file__).parent}")
    print(f"{BOLT} task (run_partition, real Redis): {args.rate:,} events per batch, "
          f"{args.batches} batches after the warm-up; CPU s per batch (median)")
    sizes = sorted(int(u) for u in args.users.split(","))
    if args.interleave:
        runs = interleaved(sizes, args)
    else:
        runs = {}
        for users in sizes:
            args.prof = cProfile.Profile() if args.profile else None
            runs[users] = measure(users, args)["batches"]
            if args.prof is not None:
                args.prof.dump_stats(f"{args.profile}.{users}")
    medians = {}
    for users in sizes:
        done = runs[users][1:]
        cpu = statistics.median(b["cpu_s"] for b in done)
        wall = statistics.median(b["wall_s"] for b in done)
        gcs = statistics.median(b["gc_s"] for b in done)
        medians[users] = cpu
        print(f"{users:>10,} users: {cpu:.3f} s CPU ({gcs:.3f} in the cyclic GC), {wall:.3f} s "
              f"wall per batch ({cpu / args.rate * 1e6:.1f} µs/event)")
    lo, hi = sizes[0], sizes[-1]
    print(f"ratio {hi:,} / {lo:,} users: {medians[hi] / medians[lo]:.2f} (target <= 1.2)")
    if args.interleave:  # each turn's ratio: the two batches ran back to back
        turns = [b["cpu_s"] / a["cpu_s"] for a, b in zip(runs[lo][1:], runs[hi][1:])]
        print("per turn: " + " ".join(f"{t:.2f}" for t in turns) +
              f" (median {statistics.median(turns):.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
