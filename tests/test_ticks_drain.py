"""Drain steps tick by their number (``driver/ticks.py``), read from Spark's offset log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stormshift.engines.spark.driver.offset_log import batch_offsets, drain_step
from stormshift.engines.spark.driver.ticks import plan_drain_ticks, plan_ticks


def _offsets(folder: Path, batch_id: int, *offsets: dict[str, Any]) -> None:
    (folder / "offsets").mkdir(parents=True, exist_ok=True)
    lines = ["v1", json.dumps({"batchWatermarkMs": 0}), *(json.dumps(o) for o in offsets)]
    (folder / "offsets" / str(batch_id)).write_text("\n".join(lines) + "\n")


def test_a_drain_step_is_a_batch_whose_drain_count_rose(tmp_path: Path) -> None:
    drains = [None, None, 1, 2, 3, 3]  # data, done, step 1, 2, 3, then fin (same count)
    for batch_id, n in enumerate(drains):
        _offsets(tmp_path, batch_id, {"done": n is not None} if n is None else
                 {"done": True, "drain": n}, {"done": True})
    assert [drain_step(str(tmp_path), b) for b in range(6)] == [None, None, 1, 2, 3, None]
    assert drain_step(str(tmp_path), 6) is None and batch_offsets(str(tmp_path), 6) is None


def test_drain_steps_give_every_ticking_bolt_the_ticks_drain_ticks_counted() -> None:
    """batch_chain: a BatchingBolt ticking every 1 s needs 3 ticks, the counter after it
    (every 2 s) one more: 5 steps. Steps 1-5 tick the batcher on each, the counter on 2
    and 4, whatever the clock says (here the steps come 10 ms apart)."""
    intervals = {"batcher": 1000, "counter": 2000}
    last: dict[str, int] = {"batcher": 0, "counter": 0}
    got = []
    for step in range(1, 6):
        due, last = plan_drain_ticks(intervals, last, 5000 + 10 * step, step)
        got.append(sorted(due))
    assert got == [["batcher"], ["batcher", "counter"], ["batcher"], ["batcher", "counter"],
                   ["batcher"]]
    # by the clock, the same instants would have ticked nobody after the first
    assert plan_ticks(intervals, last, 5060)[0] == frozenset()
    assert last == {"batcher": 5050, "counter": 5040}
