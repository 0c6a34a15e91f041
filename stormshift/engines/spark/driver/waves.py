"""Which stages of a batch run, and together with which: the batch's plan as pure functions.

Words: a *group* is stages run as one Spark stage (``stage_groups``); a *wave*
is the groups of one level of the graph -- a group's level is one more than the
highest level of the groups it reads (the spouts' frame is below level 0). The
driver runs one Spark job per wave: independent groups of a wave run at the
same time, and before a wave starts the driver knows, from the records the
tasks of the earlier waves committed (``MemberStats.sent``), which tasks got
rows this batch.

A stage is *idle* in a batch, and runs no task, when that is provable from what
the plan knows, never by running a task to find out (``stage_runs``): no
spout feeds it, no earlier stage sent its head a row, no dead letter is
redriven to it, none of its members gets a tick, the batch is not the final
one (``end_of_input``), and every windowed member's tasks reported, in a
committed batch before this one, that they hold no window, timer or held tuple
(``IdleWindows``). Storm runs a bolt only for a tuple or a tick, so skipping
such a stage changes no result: its state stays as committed (the next run
restores or catches up from that version) and it emits nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from stormshift.engines.spark.protocol.layout import Layout, Stage

__all__ = ["SPOUTS", "IdleWindows", "group_key", "stage_groups", "stage_runs", "waves"]

SPOUTS = "__spouts__"  # the frame of the spouts' rows


def group_key(group: list[Stage]) -> str:
    return group[0].head


def stage_groups(layout: Layout) -> tuple[list[list[Stage]], list[list[str]]]:
    """Stages run as one Spark stage, in run order, and the frames each group reads.

    Stages reading the same frames (two bolts subscribing to one output with
    different fields groupings, say) run in ONE ``mapInArrow`` over one
    ``repartitionById`` (partition = task of one of them): the shared input
    is read once, and Spark schedules one stage instead of several. A stage
    never joins a group it reads from (its frames would differ), so a group's
    inputs always come from earlier groups. A head run on the source's
    partitions (``Layout.direct_heads``) is a group of its own.
    """
    groups: list[list[Stage]] = []
    reads: list[list[str]] = []
    index_of: dict[tuple[str, ...], int] = {}
    key_of: dict[str, str] = {}  # stage head -> its group's key
    for stage in layout.stages:
        if stage.head in layout.direct_heads:  # runs on the source's partitions: alone
            groups.append([stage])
            reads.append([SPOUTS])
            key_of[stage.head] = stage.head
            continue
        names: list[str] = []
        for source in stage.sources:
            comp = layout.graph.component(source)
            name = SPOUTS if comp.is_spout else key_of[layout.stage_of[source].head]
            if name not in names:
                names.append(name)
        index = index_of.get(tuple(sorted(names)))
        if index is None:
            index = index_of[tuple(sorted(names))] = len(groups)
            groups.append([])
            reads.append(names)
        groups[index].append(stage)
        key_of[stage.head] = group_key(groups[index])
    return groups, reads


def waves(groups: list[list[Stage]], reads: list[list[str]]) -> list[list[int]]:
    """Group indexes by level (module doc), each level in run order."""
    level_of: dict[str, int] = {SPOUTS: -1}
    out: list[list[int]] = []
    for index, group in enumerate(groups):
        level = 1 + max(level_of[name] for name in reads[index])
        level_of[group_key(group)] = level
        while len(out) <= level:
            out.append([])
        out[level].append(index)
    return out


class IdleWindows:
    """What windowed bolts' tasks last reported holding (``batch_report``'s ``idle``), by the
    txid of the report. Reports are noted when a batch's stages all succeeded (step 4), and
    count for later txids only: a batch re-run after a failed commit asks about its own
    txid, so it runs every windowed task again. Unknown (a new driver): the stage runs."""

    def __init__(self, windowed: Iterable[str]):
        self.windowed = frozenset(windowed)
        self._last: dict[str, dict[int, tuple[int, bool]]] = {}  # bolt -> task -> (txid, idle)

    def note(self, bolt: str, task: int, txid: int, report: Mapping[str, Any]) -> None:
        self._last.setdefault(bolt, {})[task] = (txid, bool(report.get("idle", False)))

    def idle(self, bolt: str, par: int, txid: int) -> bool:
        """Whether every task of ``bolt`` is known to hold nothing before ``txid``."""
        tasks = self._last.get(bolt, {})
        return len(tasks) == par and all(t < txid and idle for t, idle in tasks.values())


def stage_runs(layout: Layout, stage: Stage, *, fed: frozenset[int], ticks: frozenset[str],
               redriven: bool, final: bool, windows: IdleWindows, txid: int) -> bool:
    """Whether ``stage`` may have work in batch ``txid`` (module doc); ``fed``: global task
    ids that got rows from the stages run so far this batch."""
    graph = layout.graph
    if final or redriven or any(graph.component(s).is_spout for s in stage.sources):
        return True
    for name in stage.members:
        if name in ticks:
            return True
        if name in windows.windowed and not windows.idle(name, stage.par, txid):
            return True
    first = layout.first_task(stage.head)
    return any(first + i in fed for i in range(stage.par))
