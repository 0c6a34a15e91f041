"""Which stages of a batch run, and together with which: the batch's plan as pure functions.

Words: a *group* is stages run as one Spark stage (``stage_groups``); a *wave*
is the groups of one level of the graph -- a group's level is one more than the
highest level of the groups it reads (the spouts' frame is below level 0).

One Spark job per batch (``first_job``): every group expected to have work --
a static reason (``stage_certain``), or its tasks got rows in the last batch --
whose inputs are in that job too, all waves in one DAG. Groups left out (a bolt
fed only by a bolt that sent it nothing last batch) run after it, one job per
wave, and only if the records the tasks committed (``MemberStats.sent``) show
rows for them: normally there are none and the batch is one job. Which job a
group runs in never changes what it computes.

A task is *idle* in a batch, and runs nothing, when that is provable from what
the plan knows plus its own rows, never by running it to find out: no spout
feeds it, no dead letter is redriven to it, none of its stage's members gets a
tick, the batch is not the final one (``end_of_input``), every windowed member's
task reported, in a committed batch before this one, that it holds no window,
timer or held tuple (``IdleWindows``), and no row came for it (``idle_tasks``
lists the tasks the first three allow; the Spark task checks the rows). A stage
of a later job is idle when no earlier stage sent its tasks a row
(``stage_runs``). Storm runs a bolt only for a tuple or a tick, so skipping such
a task changes no result: its state stays as committed (the next run restores
or catches up from that version) and it emits nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from stormshift.engines.spark.protocol.layout import Layout, Stage

__all__ = ["SPOUTS", "IdleWindows", "first_job", "group_key", "idle_tasks", "stage_certain",
           "stage_groups", "stage_runs", "stage_tasks", "waves"]

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

    def task_idle(self, bolt: str, task: int, txid: int) -> bool:
        """Whether task ``task`` of ``bolt`` is known to hold nothing before ``txid``."""
        last = self._last.get(bolt, {}).get(task)
        return last is not None and last[0] < txid and last[1]


def stage_certain(layout: Layout, stage: Stage, *, ticks: frozenset[str], redriven: bool,
                  final: bool, windows: IdleWindows, txid: int) -> bool:
    """Whether ``stage`` has work in batch ``txid`` whatever the earlier stages send it."""
    graph = layout.graph
    if final or redriven or any(graph.component(s).is_spout for s in stage.sources):
        return True
    for name in stage.members:
        if name in ticks:
            return True
        if name in windows.windowed and not windows.idle(name, stage.par, txid):
            return True
    return False


def stage_runs(layout: Layout, stage: Stage, *, fed: frozenset[int], ticks: frozenset[str],
               redriven: bool, final: bool, windows: IdleWindows, txid: int) -> bool:
    """Whether ``stage`` may have work in batch ``txid`` (module doc); ``fed``: global task
    ids that got rows from the stages run so far this batch."""
    if stage_certain(layout, stage, ticks=ticks, redriven=redriven, final=final,
                     windows=windows, txid=txid):
        return True
    return any(t in fed for t in stage_tasks(layout, stage))


def stage_tasks(layout: Layout, stage: Stage) -> range:
    """Global task ids of ``stage``'s tasks."""
    first = layout.first_task(stage.head)
    return range(first, first + stage.par)


def idle_tasks(layout: Layout, stage: Stage, *, ticks: frozenset[str], redriven: bool,
               final: bool, windows: IdleWindows, txid: int) -> frozenset[int]:
    """Task indexes of ``stage`` that are idle in batch ``txid`` if no row comes for them
    (module doc): the Spark task running one skips it when its rows are empty."""
    graph = layout.graph
    if final or redriven or any(graph.component(s).is_spout for s in stage.sources) \
            or any(name in ticks for name in stage.members):
        return frozenset()
    windowed = [name for name in stage.members if name in windows.windowed]
    return frozenset(i for i in range(stage.par)
                     if all(windows.task_idle(name, i, txid) for name in windowed))


def first_job(groups: list[list[Stage]], reads: list[list[str]],
              expected: Iterable[int]) -> list[int]:
    """Indexes of the groups the batch's one job runs (module doc), in run order: each
    ``expected`` group whose every input is the spouts' or a group of the job."""
    wanted = set(expected)
    keys = {SPOUTS}
    out = []
    for index, group in enumerate(groups):
        if index in wanted and all(name in keys for name in reads[index]):
            out.append(index)
            keys.add(group_key(group))
    return out
