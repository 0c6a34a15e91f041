"""What the metrics endpoint costs a Spark run: batch time with and without it.

Runs examples/wordcount on Spark (``local[2]``, real Redis: ``REDIS_URL`` or
127.0.0.1:6379) for ``--tuples`` spout tuples in batches of ``--batch``, in
pairs: once without an endpoint, once with ``--metrics-port``'s server and a
thread scraping it every ``--scrape-secs`` (far more often than Prometheus'
usual 15 s), alternating which goes first. Prints each run's mean batch time
(batches after the first: the first carries Spark's start-up), the ratio
with / without, and the driver's own per-batch metrics work (folding the
batch into the board and writing it to Redis, done in both runs) as a share
of batch time.

    flock /tmp/stormshift-heavy.lock python bench/metrics_cost.py [--tuples 300000] \
        [--batch 30000] [--pairs 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")


class Timed:
    """Wraps a function of the driver engine's module and adds up its time."""

    def __init__(self, module: Any, name: str):
        self.module, self.name, self.secs, self.calls = module, name, 0.0, 0
        self.inner = getattr(module, name)
        setattr(module, name, self)

    def restore(self) -> None:
        setattr(self.module, self.name, self.inner)

    def __call__(self, *args: Any, **kw: Any) -> Any:
        started = time.perf_counter()
        try:
            return self.inner(*args, **kw)
        finally:
            self.secs += time.perf_counter() - started
            self.calls += 1


def one_run(spark: Any, graph: Any, args: argparse.Namespace, endpoint: bool) -> dict[str, Any]:
    import redis

    from stormshift.engines.spark import SparkEngine
    from stormshift.engines.spark.driver import engine as driver_engine
    from stormshift.metrics.board import Board
    from stormshift.metrics.exposition import MetricsServer

    durations: list[float] = []
    fold = Timed(driver_engine, "fold_batch")
    write = Timed(driver_engine, "write_board")
    server = MetricsServer(Board.for_graph(graph, "spark"), port=0) if endpoint else None
    scrapes, stop = [0], threading.Event()

    def scrape() -> None:
        while not stop.wait(args.scrape_secs):
            urllib.request.urlopen(server.url, timeout=10).read()  # type: ignore[union-attr]
            scrapes[0] += 1

    scraper = threading.Thread(target=scrape, daemon=True) if server else None
    if scraper:
        scraper.start()
    namespace = f"bench-metrics-{uuid.uuid4().hex[:8]}"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            engine = SparkEngine(graph, checkpoint_dir=tmp, redis_url=REDIS_URL, spark=spark,
                                 namespace=namespace, batch_max_tuples=args.batch,
                                 metrics=server)

            def progress(line: str) -> None:
                if line.startswith("batch ") and " committed " in line:
                    durations.append(float(line.split(" s |")[0].rsplit(" ", 1)[1]))

            engine.run(max_tuples=args.tuples, on_progress=progress)
    finally:
        stop.set()
        if server:
            server.close()
        fold.restore()
        write.restore()
        r = redis.Redis.from_url(REDIS_URL)
        for pattern in (f"ss:{{{namespace}}}:*", f"ss:{{{namespace}:*}}:*"):
            for key in r.scan_iter(match=pattern, count=1000):
                r.delete(key)
    steady = durations[1:] or durations
    return {"batch_s": statistics.mean(steady), "batches": len(durations),
            "board_s": (fold.secs + write.secs) / max(fold.calls, 1), "scrapes": scrapes[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tuples", type=int, default=300_000)
    parser.add_argument("--batch", type=int, default=30_000)
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--scrape-secs", type=float, default=0.1)
    args = parser.parse_args()
    from stormshift.engines.spark.runtime.session import build_session
    from stormshift.topology.loader import load_topology

    graph = load_topology(ROOT / "examples" / "wordcount", name="wordcount")
    spark = build_session("local[2]", app_name="bench-metrics", shuffle_partitions=2)
    one_run(spark, graph, argparse.Namespace(**{**vars(args), "tuples": args.batch * 2}), False)
    runs: dict[bool, list[dict[str, Any]]] = {False: [], True: []}
    for pair in range(args.pairs):
        for endpoint in ((False, True) if pair % 2 == 0 else (True, False)):
            result = one_run(spark, graph, args, endpoint)
            runs[endpoint].append(result)
            print(f"pair {pair} endpoint={'on ' if endpoint else 'off'}: "
                  f"{result['batches']} batches, mean steady batch {result['batch_s']:.3f} s, "
                  f"board fold+write {result['board_s'] * 1000:.2f} ms/batch, "
                  f"{result['scrapes']} scrapes", flush=True)
    off = statistics.mean(r["batch_s"] for r in runs[False])
    on = statistics.mean(r["batch_s"] for r in runs[True])
    board = statistics.mean(r["board_s"] for rs in runs.values() for r in rs)
    print(f"batch time with endpoint + scraping / without: {on / off:.3f} "
          f"({on:.3f} s / {off:.3f} s, {args.pairs} pairs, batches of {args.batch:,})")
    print(f"driver's per-batch metrics work (fold + Redis write, both runs): "
          f"{board * 1000:.2f} ms = {board / off:.2%} of a batch")
    spark.stop()


if __name__ == "__main__":
    main()
