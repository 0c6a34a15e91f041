"""Pure facts about a graph that every Spark stage needs: stream codes, stages, placement.

This is the plan of a run: built once from the graph on the driver, pickled into
every ``StageJob`` and rebuilt from the same graph by each source. Rows between
stages follow ``rows.py`` (the row schema and its kinds); ``sid`` there is an
index into ``Layout.streams``.

A *stage* is a chain of bolts run in one ``mapInArrow``: its *head* gets rows
through ``repartitionById(par, task)``; a *fused* member gets its tuples in
process from the upstream member with the same task index. A bolt is fused
when every input comes from one bolt of the same ``par`` with a grouping that
needs no shuffle (``shuffle``, ``none``, ``local_or_shuffle``): Storm's
``local_or_shuffle`` choice, task *i* feeds task *i* (load stays as balanced
as the upstream's).

The same choice links the only spout of a topology to a stage head that
reads nothing else, with such a grouping and the spout's ``par``
(``Layout.direct_heads``): the head is *colocated* with the spout
(``Layout.colocated``), so the spout's router sends task *i*'s tuples to head
task *i* (``adapters/routing.py``: decided when the tuple is routed, never
remapped later), the source's partition *i* holds head task *i*'s rows and
beacon, and the head's stage runs on the source's partitions without a
shuffle. When the spout feeds only such heads (``Layout.deferred``), the
source sends each head task a ``READ`` row instead of the tuples, and the
head's stage reads the spout's range itself (``spoutrange.py``). Topology
config ``stormshift.spark.source_local: false`` turns this off (the rows are
then shuffled over the head's tasks: even load when the spout's tasks are
skewed).

Topology config ``stormshift.fuse: false`` (``-o stormshift.fuse=false``) turns
both off: every bolt is a stage of its own and no head is colocated with its
spout, so every hop is a row and a shuffle -- the plan fusion must agree with
(the fused-vs-unfused tests run both). ``spark_plan`` is the plan as plain
data, for ``stormshift inspect``.

*Keyed* fusion is opt-in per consumer (``stormshift.fuse.keyed: [bolt, ...]``): a
bolt B fields-grouped on the output of one bolt A of the same ``par``, where A is
itself fields-grouped, runs fused behind A, task *i* behind task *i*. Storm routes
by the values A *emits*, and A's code may emit a key other than its input's, so
this is never decided statically: at every emit to B the router still picks B's
task, and a pick other than the running task fails the batch
(``task/output.py``, ``KeyedFusionError``) naming B, the values and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stormshift.errors import TopologyError
from stormshift.topology.graph import GroupingKind, TopologyGraph

__all__ = ["FUSABLE", "FUSE_KEY", "KEYED_KEY", "Layout", "Stage", "fusion_on", "keyed_consumers",
           "plan_stages", "spark_plan"]

SOURCE_LOCAL_KEY = "stormshift.spark.source_local"
FUSE_KEY = "stormshift.fuse"
KEYED_KEY = "stormshift.fuse.keyed"
FUSABLE = frozenset({GroupingKind.SHUFFLE, GroupingKind.NONE, GroupingKind.LOCAL_OR_SHUFFLE})


@dataclass(frozen=True)
class Stage:
    """Bolts run together in one mapInArrow; ``members[0]`` is the head."""

    members: tuple[str, ...]
    par: int
    sources: tuple[str, ...]  # components whose rows feed the head (spouts or other stages' members)

    @property
    def head(self) -> str:
        return self.members[0]


class Layout:
    """Lookup tables derived once from the graph (picklable, shipped to executors)."""

    def __init__(self, graph: TopologyGraph):
        self.graph = graph
        self.streams: tuple[tuple[str, str], ...] = tuple(
            sorted((c.name, s) for c in graph for s in c.outputs)
        )
        self.stream_code = {key: i for i, key in enumerate(self.streams)}
        self.task_owner: dict[int, tuple[str, int]] = {
            c.task_id(i): (c.name, i) for c in graph for i in range(c.par)
        }
        self.leaf_streams = frozenset(
            key for key in self.streams if not graph.subscriptions(key[0], key[1])
        )
        fuse = fusion_on(graph)
        self.keyed = keyed_consumers(graph) if fuse else frozenset()
        self.stages = plan_stages(graph, fuse)
        self.stage_of = {m: s for s in self.stages for m in s.members}
        local = fuse and graph.config.get(SOURCE_LOCAL_KEY, True) is not False
        self.direct_heads = frozenset(
            s.head for s in self.stages if local and _reads_spout_locally(graph, s)
        )

    def colocated(self, spout: str) -> frozenset[str]:
        """Heads whose task *i* gets every tuple ``spout``'s task *i* sends them (module doc):
        what the spout's router is built with."""
        return frozenset(h for h in self.direct_heads if spout in self.stage_of[h].sources)

    def deferred(self, spout: str) -> bool:
        """Whether every consumer of every stream of ``spout`` is colocated with it, so those
        heads read the spout's ranges themselves (module doc)."""
        subs = [s for stream in self.graph.component(spout).outputs
                for s in self.graph.subscriptions(spout, stream)]
        colocated = self.colocated(spout)
        return bool(subs) and all(s.consumer in colocated for s in subs)

    def first_task(self, component: str) -> int:
        return self.graph.component(component).first_task_id

    def fed_by(self, stage: Stage, name: str) -> set[str]:
        """Members of ``stage`` after its head that read ``name`` (in process, fused)."""
        return {m for m in stage.members[1:]
                if any(i.source == name for i in self.graph.component(m).inputs)}


def fusion_on(graph: TopologyGraph) -> bool:
    """Whether the plan fuses (module doc): unless ``stormshift.fuse`` is false. ``-o``
    values are checked at load (``topology/overrides.py``); a topology's own config is
    checked here, so ``"false"`` (a string) in config.json never silently fuses."""
    value = graph.config.get(FUSE_KEY)
    if value is not None and type(value) is not bool:
        raise TopologyError(f"config {FUSE_KEY}={value!r}: expected true or false",
                            fix=f"set {FUSE_KEY} to the JSON boolean false (or true)")
    return value is not False


def _reads_spout_locally(graph: TopologyGraph, stage: Stage) -> bool:
    """Whether ``stage`` runs on its topology's only spout's partitions (module doc)."""
    spouts = graph.spouts
    if len(spouts) != 1 or set(stage.sources) != {spouts[0].name}:
        return False
    head = graph.component(stage.head)
    return spouts[0].par == head.par and all(i.grouping.kind in FUSABLE for i in head.inputs)


def keyed_consumers(graph: TopologyGraph) -> frozenset[str]:
    """The bolts ``stormshift.fuse.keyed`` names (module doc), each checked to be one that
    keyed fusion can run: a TopologyError naming the bolt, why and the fix otherwise."""
    names = graph.config.get(KEYED_KEY) or ()
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise TopologyError(f"{KEYED_KEY}={names!r}: expected a list of bolt names",
                            fix=f'-o \'{KEYED_KEY}=["bolt"]\'')
    for name in names:
        why = _not_keyed_fusable(graph, name)
        if why:
            raise TopologyError(
                f"{KEYED_KEY} names {name!r}, which cannot run fused by key: {why}",
                fix=f"remove {name!r} from {KEYED_KEY}")
    return frozenset(names)


def _not_keyed_fusable(graph: TopologyGraph, name: str) -> str:
    """Why ``name`` cannot run keyed-fused ('' when it can)."""
    comp = graph.components.get(name)
    if comp is None or comp.is_spout:
        return "no bolt of the topology has that name"
    sources = {i.source for i in comp.inputs}
    up = graph.component(next(iter(sources))) if len(sources) == 1 else None
    if up is None or up.is_spout:
        return "it must read one bolt only"
    if up.par != comp.par:
        return f"its par {comp.par} differs from that of {up.name!r} ({up.par})"
    if not all(i.grouping.kind is GroupingKind.FIELDS for i in comp.inputs):
        return f"its input from {up.name!r} is not a fields grouping"
    if not up.inputs or not all(i.grouping.kind is GroupingKind.FIELDS for i in up.inputs):
        return f"{up.name!r} is not itself fields-grouped, so its task i holds other keys"
    return ""


def _fusable_into(graph: TopologyGraph, name: str,
                  keyed: frozenset[str] = frozenset()) -> str | None:
    """The bolt ``name`` can run fused behind, or None (``keyed``: the checked opt-ins)."""
    comp = graph.component(name)
    sources = {i.source for i in comp.inputs}
    if len(sources) != 1:
        return None
    (source,) = sources
    up = graph.component(source)
    if up.is_spout or up.par != comp.par:
        return None
    if name in keyed or all(i.grouping.kind in FUSABLE for i in comp.inputs):
        return source
    return None


def plan_stages(graph: TopologyGraph, fuse: bool = True) -> tuple[Stage, ...]:
    """Stages in topological order (a member's upstream is always earlier); ``fuse=False``:
    one stage per bolt."""
    chains: dict[str, list[str]] = {}
    head_of: dict[str, str] = {}
    keyed = keyed_consumers(graph) if fuse else frozenset()
    for comp in graph.bolts:
        up = _fusable_into(graph, comp.name, keyed) if fuse else None
        if up is not None and up in head_of:
            head = head_of[up]
            chains[head].append(comp.name)
        else:
            head = comp.name
            chains[head] = [comp.name]
        head_of[comp.name] = head
    stages = []
    for head, members in chains.items():
        comp = graph.component(head)
        sources = tuple(dict.fromkeys(i.source for i in comp.inputs))
        stages.append(Stage(tuple(members), comp.par, sources))
    return tuple(stages)


def spark_plan(graph: TopologyGraph) -> dict[str, Any]:
    """The stages a Spark run of ``graph`` executes, as JSON-ready data (``inspect``): per
    stage its head, par, what its head reads, which spout's partitions it runs on (and
    whether it reads that spout's ranges itself), and each fused member with the bolt it
    runs behind and that input's grouping."""
    layout = Layout(graph)
    stages = []
    for stage in layout.stages:
        spout = next((s for s in stage.sources if stage.head in layout.colocated(s)), None)
        stages.append({
            "head": stage.head,
            "par": stage.par,
            "reads": list(stage.sources),
            "spout_partitions": spout,
            "reads_spout_range": spout is not None and layout.deferred(spout),
            "fused": [{"bolt": m, "behind": _fusable_into(graph, m, layout.keyed),
                       "keyed": m in layout.keyed,
                       "grouping": ", ".join(sorted({i.grouping.kind.value
                                                     for i in graph.component(m).inputs}))}
                      for m in stage.members[1:]],
        })
    return {"fuse": fusion_on(graph),
            "source_local": graph.config.get(SOURCE_LOCAL_KEY, True) is not False,
            "stages": stages}
