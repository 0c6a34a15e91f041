"""Event-time windows in a Spark task: the batch's recorded time in, what it saw out.

The driver (``driver/windows.py``) records with each batch a ``BatchTime``: the
batch's processing time, each windowed bolt's watermark (computed from the
batches before it) and whether it is the *final* batch (end of input). Each
member of a stage, per batch (``stage.py``), in this order:

1. ``start``: a windowed bolt gets ``start_batch(processing_ms, watermark_ms)``:
   panes the processing time or the watermark are due for fire now, and their
   emits go downstream in this batch like any emit;
2. its tuples (a late one is judged against that watermark);
3. ``finish``: in the final batch, ``end_of_input()`` on every bolt that defines
   it, after its tuples (windowed bolts fire every window). The final batch is one
   batch id, and a re-run of it restores the state of txid-1: every window fires
   exactly once;
4. ``report`` (at close): the windowed bolt's ``batch_report()`` and its window
   counters of this batch, committed in the task's counters record (fenced, under
   the txid: ``state/task_txn.py`` step 7), read by the driver before it commits.

Nothing here reads a clock. A hook that raises is handled like a tick that
raises (``_Member.tick``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stormshift.windows.window import START_OF_TIME_MS

__all__ = ["BatchTime", "finish", "is_windowed", "report", "start"]


@dataclass(frozen=True)
class BatchTime:
    """What the driver recorded with one batch (``driver/windows.py``)."""

    processing_ms: int
    watermarks: Mapping[str, int] = field(default_factory=dict)  # windowed bolt -> watermark
    final: bool = False  # end of input: ``end_of_input()`` after the batch's tuples


def is_windowed(member: Any) -> bool:
    """Whether the member's bolt is windowed (its capabilities, read at load)."""
    return bool(member.host.capabilities.windowed)


def start(member: Any, time: BatchTime | None) -> None:
    """Step 1 (module doc)."""
    host = member.host
    if time is None or not is_windowed(member):
        return
    member.window_counters = host.instance.window_counters()
    watermark = time.watermarks.get(member.name, START_OF_TIME_MS)
    member.tick(lambda: host.call_hook("start_batch", time.processing_ms, watermark))


def finish(member: Any, time: BatchTime | None) -> None:
    """Step 3 (module doc)."""
    if time is not None and time.final and member.host.capabilities.end_of_input:
        member.tick(member.host.end_of_input)


def report(member: Any) -> dict[str, Any] | None:
    """Step 4 (module doc): None for a member that is no windowed bolt."""
    inst = member.host.instance
    if member.window_counters is None or not is_windowed(member):
        return None
    out = dict(inst.batch_report())
    now = inst.window_counters()
    out["counters"] = {k: n - member.window_counters.get(k, 0) for k, n in sorted(now.items())}
    return out
