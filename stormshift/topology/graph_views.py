"""``stormshift inspect``'s graph as a reader needs it: lines at 80 columns, Graphviz DOT, SVG.

The table view listed every stream's fields in a cell, which at 80 columns folded into
three-letter pieces (218 lines for adclicks). A topology is a graph, so it is shown as one:
each component on a line of its own (kind, par, task ids, class), its inputs (``<-``, with
the grouping) and its streams (``->``, with the fields) indented below it; lists are broken
between names, never inside one. ``dot`` is what ``sparse visualize`` gave (Graphviz's
language); ``svg`` is drawn here, without Graphviz: components in columns by their depth from
the spouts, edges labelled with stream and grouping, one self-contained file.

All pure functions of the JSON-ready graph (``render.graph_to_dict``), so the three views and
``--json`` always agree.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from html import escape
from typing import Any

__all__ = ["graph_dot", "graph_lines", "graph_svg"]

WIDTH = 80


_KEEP = "\u00a0"  # a space no line is broken at (textwrap breaks only at ASCII whitespace)


def _wrapped(first: str, items: list[str], indent: int, width: int = WIDTH,
             within: bool = False) -> list[str]:
    """``first`` then ``items`` joined by ", ", broken only between items (``within``: also
    after a ", " inside an item, as in a dict's repr; never elsewhere inside one)."""
    def unbroken(item: str) -> str:
        parts = item.split(", ") if within else [item]
        return " ".join(p.replace(" ", _KEEP) for p in (
            [f"{q}," for q in parts[:-1]] + parts[-1:]))

    text = first.rstrip().replace(" ", _KEEP) + " " + ", ".join(unbroken(i) for i in items)
    lines = textwrap.wrap(text, width=width, subsequent_indent=" " * indent,
                          break_long_words=False, break_on_hyphens=False)
    return [line.replace(_KEEP, " ") for line in lines] or [first.rstrip()]


def _grouping(i: Mapping[str, Any]) -> str:
    fields = i.get("fields") or []
    return f"{i['grouping']}({', '.join(fields)})" if fields else str(i["grouping"])


def _tasks(ids: list[int]) -> str:
    return str(ids[0]) if len(ids) == 1 else f"{ids[0]}-{ids[-1]}"


def graph_lines(graph: Mapping[str, Any], width: int = WIDTH) -> list[str]:
    """The graph, its Spark plan and its config as lines of at most ``width`` characters
    (a single name longer than that stays whole)."""
    comps = graph["components"]
    env = f" (env {graph['environment']})" if graph.get("environment") else ""
    lines = [(f"topology {graph['name']}{env}: {len(comps)} components, "
             f"{graph['total_tasks']} tasks")]
    for c in comps:
        lines.append("")
        lines.extend(_wrapped(f"{c['name']}  {c['kind']} x{c['par']}, tasks "
                              f"{_tasks(c['task_ids'])}, ", [c["class"]], 4, width))
        if c.get("replaces"):
            lines.append(f"    (replaces Java {c['replaces']})")
        for i in c["inputs"]:
            lines.extend(_wrapped(f"  <- {i['source']}:{i['stream']} ", [_grouping(i)], 7,
                                  width))
        for s in c["streams"]:
            direct = " (direct)" if s["direct"] else ""
            lines.extend(_wrapped(f"  -> {s['name']}{direct}: ", list(s["fields"]) or
                                  ["(no fields)"], 7, width))
    replaced = [c for c in comps if c.get("translated")]
    if replaced:
        lines.append("")
        lines.append("replaced Java spouts: config read from their declaration")
        for c in replaced:
            lines.extend(_wrapped(f"  {c['name']}:", [
                f"{k}={c['config'].get(k)!r} ({where})"
                for k, where in sorted(c["translated"].items())], 6, width, within=True))
    plan = graph.get("spark_plan")
    if plan:
        lines.append("")
        fused = sum(len(s["fused"]) for s in plan["stages"])
        lines.append(f"Spark plan: {len(plan['stages'])} stages, {fused} fused bolts"
                     + ("" if plan["fuse"] else " (fusion off (stormshift.fuse=false): every bolt a stage of its own)"))
        for s in plan["stages"]:
            where = (f"on {s['spout_partitions']}'s partitions" if s.get("spout_partitions")
                     else "after a shuffle of " + ", ".join(s["reads"]))
            lines.extend(_wrapped(f"  stage {s['head']} x{s['par']}, ", [where], 8, width))
            for f in s["fused"]:
                lines.extend(_wrapped("      fused: ", [(f"{f['bolt']} <- {f['behind']} "
                                                         f"({f['grouping']})")], 13, width))
    config = graph.get("config") or {}
    if config:
        lines.append("")
        lines.extend(_wrapped("config:", [f"{k}={v!r}" for k, v in sorted(config.items())],
                              8, width, within=True))
    return lines


def _dot_id(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def graph_dot(graph: Mapping[str, Any]) -> str:
    """Graphviz DOT: spouts as boxes, bolts as ellipses, an edge per input (stream, grouping)."""
    out = [f"digraph {_dot_id(graph['name'])} {{", "  rankdir=LR;"]
    for c in graph["components"]:
        shape = "box" if c["kind"] == "spout" else "ellipse"
        label = f"{c['name']}\\nx{c['par']}"
        out.append(f"  {_dot_id(c['name'])} [shape={shape}, label={_dot_id(label)}];")
    for c in graph["components"]:
        for i in c["inputs"]:
            label = f"{i['stream']}: {_grouping(i)}"
            out.append(f"  {_dot_id(i['source'])} -> {_dot_id(c['name'])} "
                       f"[label={_dot_id(label)}];")
    out.append("}")
    return "\n".join(out) + "\n"


def _depths(graph: Mapping[str, Any]) -> dict[str, int]:
    """Each component's column: the longest path to it from a spout (components come in
    topological order, so one pass suffices)."""
    depth: dict[str, int] = {}
    for c in graph["components"]:
        depth[c["name"]] = max((depth.get(i["source"], 0) + 1 for i in c["inputs"]), default=0)
    return depth


def graph_svg(graph: Mapping[str, Any]) -> str:
    """A self-contained SVG of the graph (no script, no external asset)."""
    depth = _depths(graph)
    columns: dict[int, list[str]] = {}
    for c in graph["components"]:
        columns.setdefault(depth[c["name"]], []).append(c["name"])
    box_w, box_h, gap_x, gap_y, margin = 190, 46, 120, 34, 20
    pos: dict[str, tuple[int, int]] = {}
    for col, names in sorted(columns.items()):
        for row, name in enumerate(names):
            pos[name] = (margin + col * (box_w + gap_x), margin + 20 + row * (box_h + gap_y))
    width = margin * 2 + (max(columns) + 1) * (box_w + gap_x) - gap_x
    height = margin * 2 + 20 + max(len(n) for n in columns.values()) * (box_h + gap_y)
    kinds = {c["name"]: c for c in graph["components"]}
    parts = [(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">'),
             ('<defs><marker id="arrow" markerWidth="10" markerHeight="8" refX="9" refY="4" '
             'orient="auto"><path d="M0,0 L10,4 L0,8 z" fill="#555"/></marker></defs>'),
             (f'<text x="{margin}" y="{margin + 4}" font-size="14" font-weight="bold">'
             f'topology {escape(graph["name"])}</text>')]
    for c in graph["components"]:
        x2, y2 = pos[c["name"]]
        for i in c["inputs"]:
            x1, y1 = pos[i["source"]]
            sx, sy, ex, ey = x1 + box_w, y1 + box_h // 2, x2, y2 + box_h // 2
            label = escape(f"{i['stream']}: {_grouping(i)}")
            parts.append(f'<g class="edge"><line x1="{sx}" y1="{sy}" x2="{ex}" y2="{ey}" '
                         'stroke="#555" marker-end="url(#arrow)"/>'
                         f'<text x="{(sx + ex) // 2}" y="{(sy + ey) // 2 - 4}" '
                         f'text-anchor="middle" fill="#333">{label}</text></g>')
    for name, (x, y) in pos.items():
        c = kinds[name]
        spout = c["kind"] == "spout"
        parts.append(f'<g class="node {c["kind"]}" data-name="{escape(name)}">'
                     f'<rect x="{x}" y="{y}" width="{box_w}" height="{box_h}" '
                     f'rx="{4 if spout else 20}" fill="{"#e8f0fe" if spout else "#f1f8e9"}" '
                     'stroke="#333"/>'
                     f'<text x="{x + box_w // 2}" y="{y + 19}" text-anchor="middle">'
                     f'{escape(name)}</text>'
                     f'<text x="{x + box_w // 2}" y="{y + 36}" text-anchor="middle" '
                     f'fill="#555">{escape(c["kind"])} x{c["par"]}</text></g>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
