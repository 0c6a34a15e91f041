"""How far a replayable source's readers are behind its head: the operator's "lag".

Words: a partition's *head* is the position after its last record right now;
its *lag* at an offset is the number of records after that offset up to the
head (records, whatever the source: Kafka offsets, JSON-lines lines, Redis
stream entries). A spout task's lag is the sum over its partitions
(``partitions_of_task``). A source that can only count up to a cap (Redis
Streams: no rank of an entry id without reading the entries) says the figure
is a *lower bound*.

Each source answers ``replay_partition_lag(partition, offset)``; ``task_lags``
adds them up per task. The engines call it where the offsets live: the Spark
engine's planner after planning a batch (the lag behind the planned end), the
local engine on its spout instances' cursors. Neither call is inside a batch's
computation: the figure is a report, never part of a batch's result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stormshift.spouts.starts import initial_offset

__all__ = ["SourceLag", "task_lags"]


@dataclass(frozen=True)
class SourceLag:
    """Records behind the head per spout task (``records[t]``: task ``t``; None: a task
    this call did not measure); ``capped[t]``: some partition of task ``t`` counted up to
    a cap, so ``records[t]`` is a lower bound."""

    records: tuple[int | None, ...]
    capped: tuple[bool, ...] = ()

    def lower_bound(self, task: int) -> bool:
        return task < len(self.capped) and self.capped[task]

    def to_dict(self) -> dict[str, Any]:
        return {"records": list(self.records), "capped": list(self.capped)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SourceLag:
        return cls(tuple(None if n is None else int(n) for n in d.get("records", ())),
                   tuple(bool(c) for c in d.get("capped", ())))


def task_lags(spout: Any, offsets: Mapping[str, Any], par: int,
              partitions: Mapping[int, Sequence[str]]) -> SourceLag:
    """The lag at ``offsets`` of each task in ``partitions`` (task -> its partitions, as
    ``base.partitions_of_task`` deals them); a partition missing from ``offsets`` counts
    from its initial offset."""
    records: list[int | None] = [None] * par
    capped = [False] * par
    for task, mine in partitions.items():
        total = 0
        for partition in mine:
            offset = offsets.get(partition)
            if offset is None:
                offset = initial_offset(spout, partition)
            behind, exact = spout.replay_partition_lag(partition, offset)
            total += behind
            capped[task] = capped[task] or not exact
        records[task] = total
    return SourceLag(tuple(records), tuple(capped))
