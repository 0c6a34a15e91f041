"""Taps: any stream can be compared, leaf or not.

A leaf stream is what a topology outputs, and both engines keep those emits
(``RunSummary.outputs``, the Spark engine's sink). A stream some bolt reads is
not kept on either engine: its tuples are rows between stages (Spark) or queue
entries (local). Rather than teach each engine's data plane (the Spark task's
output, its C wire) to keep a second copy, a shadow that declares a non-leaf
stream in ``shadow.results`` adds a *tap* to the graph both sides run: a bolt
that reads the stream by shuffle grouping and re-emits every tuple unchanged on
its own leaf stream. Same class on both engines, through their public run API,
so the capture is the same on both sides; the tap holds no state (nothing to
compare in the final state) and acks each tuple, anchoring its emit, so Storm's
tuple trees are as before plus one leaf hop.

The tap's name, ``shadowtap__<component>__<stream>``, is a plain identifier
(Spark uses component names in column names and sink directories); its tasks
are numbered after every other component's, so no task id of the user's
components moves.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from stormshift.topology.graph import (
    ComponentDef,
    ComponentKind,
    Grouping,
    GroupingKind,
    InputDef,
    StreamDef,
    TopologyGraph,
    freeze,
)

__all__ = ["CLASS_PATH", "PREFIX", "add_taps", "is_tap", "output_of", "tap_name"]

PREFIX = "shadowtap__"
CLASS_PATH = "stormshift.adapters.stream_tap.StreamTap"  # the class every tap runs


def tap_name(component: str, stream: str) -> str:
    return f"{PREFIX}{component}__{stream}"


def is_tap(name: str) -> bool:
    return name.startswith(PREFIX)


def add_taps(graph: TopologyGraph, streams: Iterable[tuple[str, str]]) -> TopologyGraph:
    """``graph`` with a tap on each ``(component, stream)`` (none: ``graph`` itself)."""
    from stormshift.topology.loader import with_class

    wanted = sorted(set(streams))
    if not wanted:
        return graph
    components = dict(graph.components)
    next_id = max(t for c in graph for t in c.task_ids) + 1
    for component, stream in wanted:
        fields = graph.stream_fields(component, stream)
        name = tap_name(component, stream)
        tap = ComponentDef(
            name, ComponentKind.BOLT, CLASS_PATH, 1, freeze(dict(graph.config)),
            freeze({"default": StreamDef("default", tuple(fields))}),
            (InputDef(component, stream, Grouping(GroupingKind.SHUFFLE)),),
            first_task_id=next_id,
        )
        components[name] = with_class(tap, CLASS_PATH, graph.source_dirs, graph.config)
        next_id += 1
    return dataclasses.replace(graph, components=freeze(components))


def output_of(summary: Any, component: str, stream: str, tapped: bool) -> list[list[Any]]:
    """The emits of ``component:stream`` in ``summary``: its own leaf output, or its tap's."""
    if tapped:
        return list(summary.output(tap_name(component, stream), "default"))
    return list(summary.output(component, stream))
