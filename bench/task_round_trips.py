"""Redis round trips one Spark task makes per batch, counted, for the adclicks stages.

Runs each adclicks stage as a Spark task runs it (``run_partition``, in one
process, real Redis, the rows of ``stage_overhead.py``) for ``--batches``
txids and counts the times a task's client waits for Redis: every first
reply read after something was sent is one round trip (a pipeline of 64
``EVALSHA`` is one). Batch 1 restores from Redis (no live instance yet);
later batches reuse the live instance, as a task of a long run does. Sinks:
``drop`` (no sink writes) and ``redis:STREAM`` (the leaf emits go in too)::

    python bench/task_round_trips.py [--tuples 20000] [--batches 3] [--redis redis://127.0.0.1:6379]
"""

from __future__ import annotations

import argparse
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))

import spark_adclicks as adclicks
import stage_overhead as so


class RoundTrips:
    """Counts round trips of every redis-py connection while ``counting`` is active."""

    def __init__(self) -> None:
        self.n = 0

    @contextmanager
    def counting(self) -> Iterator[RoundTrips]:
        from redis.connection import AbstractConnection

        send, read = AbstractConnection.send_packed_command, AbstractConnection.read_response
        counter = self

        def sending(conn: Any, *args: Any, **kw: Any) -> Any:
            conn._bench_waiting = True
            return send(conn, *args, **kw)

        def reading(conn: Any, *args: Any, **kw: Any) -> Any:
            if getattr(conn, "_bench_waiting", False):
                counter.n += 1
                conn._bench_waiting = False
            return read(conn, *args, **kw)

        AbstractConnection.send_packed_command = sending  # type: ignore[method-assign]
        AbstractConnection.read_response = reading  # type: ignore[method-assign]
        try:
            yield self
        finally:
            AbstractConnection.send_packed_command = send  # type: ignore[method-assign]
            AbstractConnection.read_response = read  # type: ignore[method-assign]


def measure(args: argparse.Namespace, sink_kind: str) -> dict[str, list[float]]:
    """Stage head -> round trips per task, per batch (mean over the stage's tasks)."""
    from stormshift.engines.spark.protocol.layout import Layout
    from stormshift.engines.spark.task.sink import SinkSpec
    from stormshift.engines.spark.task.stage import StageJob, run_partition

    data = adclicks.ensure_data(2 * args.tuples, 2 * args.tuples, 2,
                                Path(adclicks.tempfile.gettempdir()) / "stormshift-bench")
    graph = adclicks.adclicks_on_files(data, 2)
    layout = Layout(graph)
    first_file = min(data.glob("part-*.jsonl"))
    namespace = f"bench-rt-{uuid.uuid4().hex[:12]}"
    stream = f"{namespace}-sink"
    sink = SinkSpec("redis", stream) if sink_kind == "redis" else SinkSpec("drop")
    source = so._read_row_table(layout, graph, args, first_file.name, args.tuples)
    by_head = {s.head: s for s in layout.stages}
    out: dict[str, list[float]] = {}
    counter = RoundTrips()
    try:
        for txid in range(1, args.batches + 1):
            jobs = {s.head: StageJob(layout, s, txid, frozenset(), args.redis, namespace,
                                     b"bench-key", sink) for s in layout.stages}

            def run(table: Any, jobs: dict[str, Any] = jobs) -> tuple[int, Any]:
                import pyarrow as pa

                from stormshift.engines.spark.protocol import rows as R

                before = counter.n
                with counter.counting():
                    rows = list(run_partition(jobs, iter(table.to_batches(max_chunksize=1 << 16))))
                return counter.n - before, (pa.Table.from_batches(rows) if rows
                                            else R.SCHEMA.empty_table())

            trips, parsed = run(source)
            out.setdefault("parse_bolt", []).append(trips)
            for head in ("ads_ctr_bolt", "client_spent_bolt"):
                stage = by_head[head]
                total = sum(run(so._rows_for(layout, parsed, stage, t))[0] for t in range(stage.par))
                out.setdefault(head, []).append(total / stage.par)
            _commit(args.redis, namespace, txid)
    finally:
        adclicks._delete_namespace(args.redis, namespace)
        import redis

        redis.Redis.from_url(args.redis).delete(stream)
    return out


def _commit(url: str, namespace: str, txid: int) -> None:
    """What the driver does after every stage of the batch: record the commit."""
    from stormshift.state.commit import CommitLog
    from stormshift.state.connection import connect

    CommitLog(connect(url), namespace).record_commit(txid)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tuples", type=int, default=20_000)
    p.add_argument("--batches", type=int, default=3)
    p.add_argument("--redis", default="redis://127.0.0.1:6379")
    args = p.parse_args(argv)
    print(f"Redis round trips per task per batch, adclicks stages, {args.tuples:,} lines "
          f"(batch 1 restores; later batches reuse the live instance)")
    print(f"{'sink':>6} {'stage':>18} " + " ".join(f"{'batch ' + str(b):>8}" for b in
                                                   range(1, args.batches + 1)))
    for sink in ("drop", "redis"):
        for head, trips in measure(args, sink).items():
            print(f"{sink:>6} {head:>18} " + " ".join(f"{t:>8.1f}" for t in trips))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
