"""The ``(storm_conf, context)`` pair a component's ``initialize`` receives.

Shapes follow Storm's multilang handshake, i.e. ``TopologyContext.toJSONString``
(storm-core ``org.apache.storm.task.TopologyContext``):

- ``taskid`` (int), ``componentid`` (str)
- ``task->component``: ``{"<task id>": component}`` (str keys: it is JSON)
- ``streams``: this component's output streams;
  ``stream->outputfields``: ``{stream: [fields]}``
- ``stream->target->grouping``: ``{stream: {consumer: grouping}}`` for
  subscribed output streams
- ``source->stream->grouping``: ``{source: {stream: grouping}}`` for inputs
- ``source->stream->fields``: ``{source: {stream: [fields]}}`` for *every*
  stream of each source read (as Storm's ``getThisInputFields``)

A grouping is ``{"type": <Thrift union field as Java names it>}`` plus
``"fields"`` for fields groupings: ``FIELDS``, ``SHUFFLE``, ``ALL``,
``NONE``, ``DIRECT``, ``LOCAL_OR_SHUFFLE``. Storm implements ``global`` as a
fields grouping on no fields, so it appears as ``{"type": "FIELDS",
"fields": []}``. Storm's system tasks (``__acker``, ``__system``) have no
counterpart here and are not listed.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from stormshift.topology.graph import ComponentDef, Grouping, GroupingKind, TopologyGraph

TICK_FREQ_KEY = "topology.tick.tuple.freq.secs"


def grouping_json(grouping: Grouping) -> dict[str, Any]:
    kind = grouping.kind
    if kind is GroupingKind.GLOBAL:
        return {"type": "FIELDS", "fields": []}
    if kind is GroupingKind.FIELDS:
        return {"type": "FIELDS", "fields": list(grouping.fields)}
    return {"type": kind.value.upper()}


def storm_conf(
    graph: TopologyGraph, component: ComponentDef, overrides: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Topology config overlaid with the component's (already merged in the
    graph) and ``overrides``; a deep copy the component may mutate freely."""
    conf: dict[str, Any] = copy.deepcopy(dict(graph.config))
    conf.update(copy.deepcopy(dict(component.config)))
    if overrides:
        conf.update(copy.deepcopy(dict(overrides)))
    conf.setdefault("topology.name", graph.name)
    conf.setdefault("topology.debug", False)
    return conf


def storm_context(graph: TopologyGraph, component: str, task_index: int) -> dict[str, Any]:
    comp = graph.component(component)
    targets: dict[str, dict[str, Any]] = {}
    for stream in sorted(comp.outputs):
        for sub in graph.subscriptions(comp.name, stream):
            targets.setdefault(stream, {})[sub.consumer] = grouping_json(sub.grouping)
    sources: dict[str, dict[str, Any]] = {}
    source_fields: dict[str, dict[str, list[str]]] = {}
    for inp in comp.inputs:
        sources.setdefault(inp.source, {})[inp.stream] = grouping_json(inp.grouping)
        src = graph.component(inp.source)
        source_fields[inp.source] = {s: list(src.outputs[s].fields) for s in sorted(src.outputs)}
    return {
        "taskid": comp.task_id(task_index),
        "componentid": comp.name,
        "task->component": {
            str(tid): name for tid, name in sorted(graph.task_to_component().items())
        },
        "streams": sorted(comp.outputs),
        "stream->outputfields": {s: list(comp.outputs[s].fields) for s in sorted(comp.outputs)},
        "stream->target->grouping": targets,
        "source->stream->grouping": sources,
        "source->stream->fields": source_fields,
    }


def tick_interval_secs(conf: Mapping[str, Any]) -> float | None:
    """``topology.tick.tuple.freq.secs`` as a positive float, or None (no ticks)."""
    value = conf.get(TICK_FREQ_KEY)
    if value is None:
        return None
    secs = float(value)
    return secs if secs > 0 else None
