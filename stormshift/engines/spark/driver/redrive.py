"""Redriven dead letters as rows of a batch (the driver's half of ``state/redrive.py``).

Batch TXID claims its redrive entries in step 2 (``Redrive.claim``: the same
entries on every re-run of TXID) and turns each into ONE row for the bolt that
dead-lettered it, as if its original source had emitted it again:

- ``dest``: the task the bolt's input grouping picks (``routing.choose_tasks``;
  round robin counts the batch's redriven tuples of that bolt); ``all`` and
  ``direct`` groupings go back to the task that dead-lettered it (the others
  already processed it);
- ``kind``: ``REDRIVEN`` (``rows.Kind``): the row sorts after every real emit of
  its source task, and is no emit of it (not in the spout counts);
- ``src``: the source component's first task; ``seq``: the entry's index among
  the batch's redriven rows (deterministic order);
- ``sid``: the code of ``(source, stream)``; ``v``: a chunk of one tuple
  (``rows.redriven_row``).

The rows are a small DataFrame unioned into the input of the bolt's stage.
Only a stage head gets rows from other stages; an entry of a bolt that runs
fused behind another, or one that no longer fits the topology (component,
subscription or arity changed), is dead-lettered again with reason
``redrive`` under this txid (idempotent: key ``redrive:<entry id>``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stormshift.adapters.routing import choose_tasks
from stormshift.engines.spark.protocol import rows as R
from stormshift.engines.spark.protocol.layout import Layout
from stormshift.state.client import Redis
from stormshift.state.deadletter import DeadLetter
from stormshift.topology.graph import GroupingKind

__all__ = ["RedrivePlan", "plan_redrive"]

Row = tuple[int, int, int, int, int, bytes]  # rows.SCHEMA's columns


@dataclass
class RedrivePlan:
    """Rows per stage head, redriven tuples per bolt, and the entries that cannot go back."""

    rows: dict[str, list[Row]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    rejected: list[tuple[DeadLetter, str]] = field(default_factory=list)

    def frame(self, spark: Any, head: str) -> Any | None:
        rows = self.rows.get(head)
        return spark.createDataFrame(rows, R.SCHEMA_DDL) if rows else None

    def dead_letter_rejected(self, r: Redis, namespace: str, txid: int) -> None:
        from stormshift.state.deadletter import DeadLetters

        letters = DeadLetters(r, namespace)
        for entry, why in self.rejected:
            letters.add(entry.component, entry.stream, entry.values,
                        f"redrive of dead letter {entry.id} refused: {why}", entry.traceback, txid,
                        source=entry.source, tuple_key=f"redrive:{entry.id}", task=entry.task,
                        reason="redrive")


def plan_redrive(layout: Layout, entries: list[DeadLetter]) -> RedrivePlan:
    """Pure: the same entries give the same rows (module doc)."""
    plan = RedrivePlan()
    for i, entry in enumerate(entries):
        try:
            dest, src, sid = _route(layout, entry, plan.counts.get(entry.component, 0))
        except _Refused as why:
            plan.rejected.append((entry, str(why)))
            continue
        plan.rows.setdefault(entry.component, []).append(R.redriven_row(dest, src, i, sid, list(entry.values)))
        plan.counts[entry.component] = plan.counts.get(entry.component, 0) + 1
    return plan


class _Refused(Exception):
    pass


def _route(layout: Layout, entry: DeadLetter, seq: int) -> tuple[int, int, int]:
    graph = layout.graph
    comp = graph.components.get(entry.component)
    if comp is None or comp.is_spout:
        raise _Refused(f"{entry.component!r} is not a bolt of topology {graph.name!r}; "
                       "fix: redrive only bolt dead letters")
    head = layout.stage_of[comp.name].head
    if head != comp.name:
        raise _Refused(f"{comp.name!r} runs fused behind {head!r} (same task, no shuffle), so "
                       "no rows reach it; fix: give it a grouping other than shuffle/none/"
                       "local_or_shuffle or another par to make it a stage of its own, or run "
                       "with -o stormshift.fuse=false")
    inputs = [i for i in comp.inputs if i.stream == entry.stream
              and (entry.source is None or i.source == entry.source)]
    if len(inputs) != 1:
        raise _Refused(f"{comp.name!r} does not subscribe to stream {entry.stream!r} of "
                       f"{entry.source!r} (one subscription needed)")
    sub = inputs[0]
    fields = graph.stream_fields(sub.source, sub.stream)
    values = entry.values
    if not isinstance(values, list) or len(values) != len(fields):
        raise _Refused(f"values {values!r} do not match the {len(fields)} fields {list(fields)} "
                       f"of {sub.source!r} stream {sub.stream!r}")
    kind = sub.grouping.kind
    if kind in (GroupingKind.ALL, GroupingKind.DIRECT):
        if entry.task is None or not 0 <= entry.task < comp.par:
            raise _Refused(f"{kind.value} grouping needs the task that dead-lettered it "
                           f"(entry says {entry.task!r}, par is {comp.par})")
        index = entry.task
    else:
        positions = [fields.index(f) for f in sub.grouping.fields]
        try:
            (index,) = choose_tasks(sub.grouping, comp.par, values, field_positions=positions,
                                    emitter_task_index=0, seq=seq)
        except TypeError as exc:
            raise _Refused(f"cannot route by {sub.grouping}: {exc}") from None
    return comp.task_id(index), layout.first_task(sub.source), layout.stream_code[(sub.source, sub.stream)]
