"""A replayable source's partitions, msg ids and ranges: which task reads what, and how.

The words of ``base.py``'s module doc (partition, offset, msg id) as functions every
reader shares: the spouts' local loop (``base.py``), the Spark engine's planner and
reads, tests' fixtures. Split from ``base.py`` (the spout class) because none of it needs
a spout instance but ``read_range``, which needs only its ``replay_read`` (``RangeReader``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

from stormshift.spouts.values import RecordDecodeError

__all__ = ["RangeReader", "parse_msg_id", "partitions_of_task", "read_range", "task_position"]


class RangeReader(Protocol):
    """What ``read_range`` reads: a replayable spout's ``replay_read`` (``base.py``)."""

    def replay_read(self, partition: str, start: Any, end: Any) -> Iterator[tuple[list[Any], str]]: ...


def parse_msg_id(msg_id: str) -> tuple[str, str]:
    """``(partition, offset text)`` of a msg id (offsets never contain ':')."""
    partition, _, offset = str(msg_id).rpartition(":")
    return partition, offset


def partitions_of_task(partitions: list[str], task_index: int, par: int) -> list[str]:
    """Partition ``i`` (sorted order) belongs to task ``i % par``."""
    return [p for i, p in enumerate(sorted(partitions)) if i % par == task_index]


def task_position(context: Mapping[str, Any] | None) -> tuple[int, int]:
    """``(task_index, par)`` of this spout task from a Storm context dict.

    Storm's context maps every task id to its component; our tasks are the
    ids of ``componentid``, in order. A missing context means one task.
    """
    if not context or "task->component" not in context:
        return 0, 1
    component = context.get("componentid")
    task_id = int(context.get("taskid", -1))
    ids = sorted(int(t) for t, c in context["task->component"].items() if c == component)
    if task_id not in ids:
        return 0, 1
    return ids.index(task_id), len(ids)


def read_range(
    spout: RangeReader,
    partition: str,
    start: Any,
    end: Any,
    on_error: Callable[[RecordDecodeError], None],
) -> Iterator[tuple[list[Any], str]]:
    """Every good record of ``(start, end]``; bad ones go to ``on_error``.

    Resumes after each undecodable record, so one bad line never hides the
    rest of a partition (the engine passes its dead-letter writer here). A
    record that decodes to values Storm cannot send goes to ``on_error`` too
    (the spout's ``refuse``, where it has one: ``ReplayableSpout.refuse``), before anything
    emits it.
    """
    position = start
    refuse = getattr(spout, "refuse", None)
    while True:
        try:
            if refuse is None:
                yield from spout.replay_read(partition, position, end)
                return
            for values, msg_id in spout.replay_read(partition, position, end):
                bad = refuse(partition, msg_id, values)
                if bad is None:
                    yield values, msg_id
                else:
                    on_error(bad)
            return
        except RecordDecodeError as err:
            on_error(err)
            if err.offset == position:  # pragma: no cover - a reader bug, not data
                raise
            position = err.offset
