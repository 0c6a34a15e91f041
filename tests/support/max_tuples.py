"""The ``--max-tuples`` oracle (tests/test_max_tuples.py's module doc), shared with the
Kafka tests: which tuples a capped run takes, and what a run's leaf streams saw.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "spark_fixtures"))

import maxtopo


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
