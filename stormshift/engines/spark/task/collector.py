"""The cyclic garbage collector in a task host: the young objects after each task, the old
ones only when a quarter of them is new.

Why: a task host keeps its bolts' live instances between batches (``task_host.py``), and a
windowed bolt's state is millions of tracked objects. CPython's full collection walks
every one of them. With its default thresholds (a young collection per 700 new objects) a
batch's own objects (input Tuples, emits, rows, held for the whole task) survive two young
collections, reach the oldest generation and count there as new: a full collection then
ran every other batch, and a batch's cost grew with the state it did not touch (issue 32;
``bench/history.md``, eleventh session, "the collector in task hosts").

So while a task runs, a young collection waits for ``TASK_YOUNG_THRESHOLD`` new objects (a
batch's transient objects die by reference counting first); when it ends, one collection
of the young generations frees the task's own cycles and keeps what the task added to the
state. The oldest generation is left to CPython's own rule, which collects it once the
objects promoted since its last collection reach a quarter of it: a cost that follows the
state's change, not the number of batches. A process whose collector is off (the user's
choice) is left alone.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["TASK_YOUNG_THRESHOLD", "task_collections"]

TASK_YOUNG_THRESHOLD = 500_000
"""New tracked objects (allocations minus frees) before a young collection during a task: a
bound on the cyclic garbage a task leaves until it ends (~50 MiB of small objects)."""


@contextlib.contextmanager
def task_collections(young: int = TASK_YOUNG_THRESHOLD) -> Iterator[None]:
    """Run one task under the policy above; thresholds are restored on the way out."""
    if not gc.isenabled():
        yield
        return
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], young), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.collect(1)
