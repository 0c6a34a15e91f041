"""``stormshift inspect``: the loaded graph as a rich table, or as JSON data.

Both views list components in topological order with what a user checks
before a port: class, par, task ids, streams and fields (direct streams
marked), and inputs with their groupings; secret config entries (keys,
passwords, tokens) are masked in both (``private.mask_config``). With the Spark
plan (plain data from the engine's ``spark_plan``, handed in by ``cli/inspect.py``:
this layer knows no engine) they show its stages too: which bolts run fused
behind which head, and which heads run on their spout's partitions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Group
from rich.table import Table

from stormshift.display import cell
from stormshift.private import mask_config
from stormshift.topology.graph import ComponentDef, TopologyGraph

__all__ = ["graph_to_dict", "plan_table", "render_graph"]


def task_range(component: ComponentDef) -> str:
    ids = component.task_ids
    return str(ids[0]) if len(ids) == 1 else f"{ids[0]}-{ids[-1]}"


def stream_lines(component: ComponentDef) -> str:
    return "\n".join(
        f"{s.name}{' (direct)' if s.direct else ''}: {', '.join(s.fields) or '(no fields)'}"
        for s in component.outputs.values()
    )


def input_lines(component: ComponentDef) -> str:
    return "\n".join(f"{i.source}:{i.stream} <- {i.grouping}" for i in component.inputs)


def class_text(component: ComponentDef) -> str:
    if component.replaces:
        return f"{component.class_path}\n(replaces Java {component.replaces})"
    return component.class_path


def components_table(graph: TopologyGraph) -> Table:
    title = f"topology {graph.name}" + (f" (env {graph.environment})" if graph.environment else "")
    table = Table(title=title, show_lines=True)
    for column in ("component", "kind", "class", "par", "tasks", "streams (fields)", "inputs"):
        table.add_column(column, no_wrap=column in ("component", "par", "tasks"), overflow="fold")
    for c in graph:
        table.add_row(
            cell(c.name),
            c.kind.value,
            cell(class_text(c)),
            str(c.par),
            task_range(c),
            cell(stream_lines(c)),
            cell(input_lines(c)),
        )
    return table


def config_table(config: Mapping[str, Any]) -> Table:
    table = Table(title="topology config")
    table.add_column("key", overflow="fold")
    table.add_column("value", overflow="fold")
    shown = mask_config(_plain(config))  # keys, passwords and tokens never shown
    for key in sorted(shown):
        table.add_row(cell(key), cell(repr(shown[key])))
    return table


def translated_table(graph: TopologyGraph) -> Table:
    """Config a replacement took from its Java spout's declaration, and from where."""
    table = Table(title="replaced Java spouts: config read from their declaration")
    for column in ("component", "key", "value", "from"):
        table.add_column(column, overflow="fold")
    for c in graph:
        for key, where in sorted(c.translated.items()):
            value = mask_config(_plain(c.config.get(key)), key)
            table.add_row(cell(c.name), cell(key), cell(repr(value)), cell(where))
    return table


def plan_input(stage: Mapping[str, Any]) -> str:
    """What a stage's head reads, in words (``spark_plan``'s stage)."""
    spout = stage.get("spout_partitions")
    if spout is None:
        return "rows of " + ", ".join(stage["reads"]) + " (a shuffle)"
    how = "reads its task's range itself" if stage.get("reads_spout_range") else "no shuffle"
    return f"the partitions of {spout}: spout task i -> task i ({how})"


def plan_fused(stage: Mapping[str, Any]) -> str:
    return "\n".join(f"{f['bolt']} <- {f['behind']} ({f['grouping']}"
                      + (", keyed: checked at every emit)" if f.get("keyed") else ")")
                      for f in stage["fused"]) or "-"


def plan_table(plan: Mapping[str, Any]) -> Table:
    """The Spark plan's stages: one row per stage (its head), its fused members, what it
    reads; the caption says when ``stormshift.fuse`` turned fusion off."""
    fused = sum(len(s["fused"]) for s in plan["stages"])
    local = sum(s["spout_partitions"] is not None for s in plan["stages"])
    caption = (f"{len(plan['stages'])} stages, {fused} fused bolts, {local} on spout partitions"
               if plan["fuse"] else
               "fusion off (stormshift.fuse=false): every bolt a stage of its own, every hop rows "
               "and a shuffle")
    table = Table(title="Spark plan: stages (one mapInArrow each)", caption=caption)
    for column in ("stage head", "par", "input", "fused behind it (task i -> task i, in process)"):
        table.add_column(column, no_wrap=column == "par", overflow="fold")
    for stage in plan["stages"]:
        table.add_row(cell(stage["head"]), str(stage["par"]), cell(plan_input(stage)),
                      cell(plan_fused(stage)))
    return table


def render_graph(graph: TopologyGraph, plan: Mapping[str, Any] | None = None) -> Group:
    """The components table, what replacements read from Java declarations, the Spark
    plan when given (``plan_table``), and the topology config when there is any."""
    tables: list[Table] = [components_table(graph)]
    if any(c.translated for c in graph):
        tables.append(translated_table(graph))
    if plan is not None:
        tables.append(plan_table(plan))
    if graph.config:
        tables.append(config_table(graph.config))
    return Group(*tables)


def _plain(value: Any) -> Any:
    """FrozenDicts/tuples as plain dicts/lists, so json.dumps output is stable."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def component_to_dict(c: ComponentDef) -> dict[str, Any]:
    return {
        "name": c.name,
        "kind": c.kind.value,
        "class": c.class_path,
        "replaces": c.replaces,
        "translated": _plain(c.translated),
        "par": c.par,
        "task_ids": list(c.task_ids),
        "streams": [
            {"name": s.name, "fields": list(s.fields), "direct": s.direct}
            for s in c.outputs.values()
        ],
        "inputs": [
            {
                "source": i.source,
                "stream": i.stream,
                "grouping": i.grouping.kind.value,
                "fields": list(i.grouping.fields),
            }
            for i in c.inputs
        ],
        "config": mask_config(_plain(c.config)),
    }


def graph_to_dict(graph: TopologyGraph, plan: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """JSON-ready description of the graph (for ``inspect --json``), with the Spark plan
    as ``spark_plan`` when given."""
    extra = {} if plan is None else {"spark_plan": _plain(plan)}
    return {
        "name": graph.name,
        "environment": graph.environment,
        "project_dir": graph.project_dir,
        "working_dir": graph.working_dir,
        "source_dirs": list(graph.source_dirs),
        "total_tasks": graph.total_tasks,
        "config": mask_config(_plain(graph.config)),
        "components": [component_to_dict(c) for c in graph],
        **extra,
    }
