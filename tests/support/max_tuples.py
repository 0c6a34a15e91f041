"""The ``--max-tuples`` oracle (tests/test_max_tuples.py's module doc), shared with the
Kafka tests: which tuples a capped run takes, and what a run's leaf streams saw.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "spark_fixtures"))

import maxtopo

from stormshift.topology.loader import load_topology


# -- the oracle -------------------------------------------------------------------
def first_n(per_task: list[list[int]], n: int) -> list[int]:
    """The ``n`` tuples a run takes (module doc), sorted."""
    taken = [0] * len(per_task)
    total = 0
    while total < n and any(t < len(tuples) for t, tuples in zip(taken, per_task)):
        for i, tuples in enumerate(per_task):
            if total < n and taken[i] < len(tuples):
                taken[i] += 1
                total += 1
    return sorted(x for i, tuples in enumerate(per_task) for x in tuples[:taken[i]])



def key_counts(ns: list[int]) -> dict[str, int]:
    return dict(Counter(maxtopo.key_of(n) for n in ns))



def per_task_of_partitions(partitions: dict[str, list[int]], par: int) -> list[list[int]]:
    tasks: list[list[int]] = [[] for _ in range(par)]
    for i, name in enumerate(sorted(partitions)):
        tasks[i % par].extend(partitions[name])
    return tasks



def seen(summary: Any) -> list[int]:
    return sorted(v[0] for v in summary.output("seen", "seen"))



def counts(summary: Any) -> dict[str, int]:
    return {k: v[1] for k, v in summary.latest("counts").items()}


# -- the replayable sources' inputs ----------------------------------------------------
FILES = {"a.jsonl": 10, "b.jsonl": 25, "c.jsonl": 7}  # task 0: a + c (17 lines), task 1: b


def jsonlines_graph(root: Path, topology: Any = maxtopo.JsonLines) -> tuple[Any, list[list[int]]]:
    root.mkdir(exist_ok=True)
    partitions: dict[str, list[int]] = {}
    n = 0
    for name, lines in FILES.items():
        partitions[name] = list(range(n, n + lines))
        with (root / name).open("w") as fh:
            for x in partitions[name]:
                fh.write(json.dumps({"n": x, "key": maxtopo.key_of(x)}) + "\n")
        n += lines
    graph = load_topology(topology, overrides={"jsonlines.path": str(root)})
    return graph, per_task_of_partitions(partitions, 2)


STREAMS = {"a": 8, "b": 30, "c": 12}  # unbounded: task 0 reads a then c, task 1 reads b


def make_redis_streams(redis_url: str) -> Iterator[tuple[Any, list[list[int]]]]:
    import redis

    r = redis.Redis.from_url(redis_url)
    prefix = f"maxt-{uuid.uuid4().hex[:8]}"
    partitions: dict[str, list[int]] = {}
    n = 0
    for name, entries in STREAMS.items():
        key = f"{prefix}:{name}"
        partitions[key] = list(range(n, n + entries))
        for x in partitions[key]:
            r.xadd(key, {"payload": json.dumps({"n": x, "key": maxtopo.key_of(x)})})
        n += entries
    graph = load_topology(maxtopo.RedisStreams, overrides={
        "redis_streams.url": redis_url, "redis_streams.keys": sorted(partitions)})
    yield graph, per_task_of_partitions(partitions, 2)
    r.delete(*partitions)
