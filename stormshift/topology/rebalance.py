"""``--par COMPONENT=N``: the topology's parallelism as the operator asks, not as declared.

Storm's ``storm rebalance -e COMPONENT=N`` changed a running topology's
executors; here the same request is a pure copy of the frozen graph with new
``par`` values (task ids renumbered as the loader numbers them), given to
``run``, ``inspect``, ``plan`` and ``submit``. What the state already in Redis
allows (re-split or refused) is decided by the engine before any batch
(``state/rescale.py``: ``rebalance``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from stormshift.errors import TopologyError
from stormshift.topology.graph import TopologyGraph, freeze

__all__ = ["parse_pars", "with_par"]


def parse_pars(pairs: Iterable[str]) -> dict[str, int]:
    """``COMPONENT=N`` texts -> ``{component: N}`` (later ones win); TopologyError if malformed."""
    out: dict[str, int] = {}
    for text in pairs:
        name, sep, value = text.partition("=")
        name = name.strip()
        try:
            par = int(value)
        except ValueError:
            par = 0
        if not sep or not name or par < 1:
            raise TopologyError(f"--par {text!r} is not COMPONENT=N with N >= 1",
                                fix="write e.g. --par count=3 (repeat --par for more components)")
        out[name] = par
    return out


def with_par(graph: TopologyGraph, pars: Mapping[str, int]) -> TopologyGraph:
    """``graph`` with each named component at its new par and task ids renumbered (Storm
    numbers tasks from 1 in component-name order); TopologyError naming an unknown one."""
    unknown = sorted(set(pars) - set(graph.components))
    if unknown:
        raise TopologyError(
            f"--par names {', '.join(repr(u) for u in unknown)}, which topology "
            f"{graph.name!r} does not have",
            fix=f"use one of its components: {', '.join(sorted(graph.components))}")
    if all(graph.components[n].par == p for n, p in pars.items()):
        return graph
    from stormshift.topology.loader import assign_task_ids

    components = assign_task_ids([dataclasses.replace(c, par=pars.get(c.name, c.par))
                                  for c in graph])
    return dataclasses.replace(graph, components=freeze({c.name: c for c in components}))
