"""Opt-in profiles of the Python side of each Spark task (``STORMSHIFT_PROFILE=DIR``).

Spark's UI shows how long a task took, not where its Python time went. With
the variable set (it reaches local-mode workers through the driver's
environment; on a cluster pass ``spark.executorEnv.STORMSHIFT_PROFILE``),
every stage task and source read appends one line to ``DIR/tasks.jsonl``
(label, pid, start, wall and CPU seconds) and, unless
``STORMSHIFT_PROFILE_MODE=time``, writes a ``cProfile`` file
``DIR/<label>-<pid>-<n>.prof``. ``bench/profile_report.py DIR`` sums both.
Off by default; cProfile roughly halves the speed, ``time`` mode costs nothing
measurable. cProfile does not see into the compiled hot path (``native.py``): set
``STORMSHIFT_PURE=1`` as well to list the framework's functions. Timing is only observed, never fed into a batch's computation.
"""

from __future__ import annotations

import cProfile
import json
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["profiled"]


def profiled(label: str | Callable[[], str], gen: Iterator[Any]) -> Iterator[Any]:
    """``gen`` unchanged; profiled into ``$STORMSHIFT_PROFILE`` when that is set.

    ``label`` may be a function, called when ``gen`` is done (a stage task
    learns which stage it is from its input)."""
    where = os.environ.get("STORMSHIFT_PROFILE")
    if not where:
        return gen
    return _run(label, gen, where, os.environ.get("STORMSHIFT_PROFILE_MODE") != "time")


def _run(label: str | Callable[[], str], gen: Iterator[Any], where: str,
         with_cprofile: bool) -> Iterator[Any]:
    os.makedirs(where, exist_ok=True)
    prof = cProfile.Profile() if with_cprofile else None
    started, wall, cpu = time.time(), 0.0, 0.0
    it = iter(gen)
    try:
        while True:  # time only our own work: not the consumer between two items
            w0, c0 = time.perf_counter(), time.process_time()
            if prof:
                prof.enable()
            try:
                item = next(it)
            except StopIteration:
                return
            finally:
                if prof:
                    prof.disable()
                wall += time.perf_counter() - w0
                cpu += time.process_time() - c0
            yield item
    finally:
        name = label() if callable(label) else label
        record = {"label": name, "pid": os.getpid(), "start": round(started, 3),
                  "wall_s": round(wall, 4), "cpu_s": round(cpu, 4)}
        with open(os.path.join(where, "tasks.jsonl"), "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
        if prof:
            safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
            prof.dump_stats(os.path.join(where, f"{safe}-{os.getpid()}-{int(started * 1e6)}.prof"))
