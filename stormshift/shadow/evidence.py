"""What each side's own run reports it lost: the evidence ``classify`` attributes by.

A shadow never blames the port for what the legacy side (Storm's semantics) lost
on its own, so the legacy run's counters are read as evidence, never guessed:

- *restarts*: a bolt task that raised (the user's own error, or an injected
  ``crash:``) was restarted with a fresh ``initialize()``: its in-memory state
  started again, and the tuples queued for it were ``lost`` (replayed later by a
  reliable spout, or never). The shadow re-runs the legacy side without restarts
  (``run.py``: the *baseline*) to tell that loss from anything the port does;
- *unfinished*: the legacy run did not take all of its input: the engine gave up
  replaying a poison tuple (``gave_up``: a reliable spout then waits for it for
  ever), the run stopped on a budget or early stop, trees were still pending, or
  it took fewer spout tuples than the port did (a budget both sides share, ``--max-tuples``,
  is no loss: the port stopped there too). Keys where the legacy is *below*
  the port are then what the legacy never got to;
- on the port's side: the tuples it dead-lettered (a poison tuple set aside,
  where Storm replays it without end).

``losses`` says all that in one line per fact, the report's "legacy lost: ...".
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from stormshift.topology.graph import TopologyGraph

__all__ = ["EXHAUSTED", "losses", "replay_evidence", "restarts", "unfinished", "upstream"]

#: the local engine's stop reason when every spout ran out of input (``engines/local``)
EXHAUSTED = "sources exhausted"


def upstream(graph: TopologyGraph, component: str) -> list[str]:
    """``component`` and every component it reads from, directly or not (sorted)."""
    seen: set[str] = set()
    todo = [component]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(i.source for i in graph.component(name).inputs)
    return sorted(seen)


def replay_evidence(graph: TopologyGraph, run: Any, component: str) -> dict[str, int]:
    """What ``run`` reported on the way to ``component``: summed ``duplicates``,
    ``replays``, ``restarts`` and ``lost`` of it and its upstream."""
    names = upstream(graph, component)
    stats = [run.components[n] for n in names if n in run.components]
    return {c: sum(getattr(s, c) for s in stats) for c in ("duplicates", "replays", "restarts", "lost")}


def restarts(run: Any, names: Iterable[str] | None = None) -> dict[str, int]:
    """Bolt restarts per component of ``run`` (only ``names`` when given), sorted by name."""
    wanted = set(names) if names is not None else None
    return {n: s.restarts for n, s in sorted(run.components.items())
            if s.restarts and s.kind == "bolt" and (wanted is None or n in wanted)}


def unfinished(run: Any, port: Any | None = None) -> str:
    """Why ``run`` (a legacy run) did not take all of its input, or "" when it did."""
    if run is None:
        return ""
    gave_up = sum(s.gave_up for s in run.components.values())
    why = []
    if gave_up:
        why.append(f"gave up replaying {gave_up:,} tuple(s) (poison: each failed more than "
                   "stormshift.max_replays times)")
    took = run.spout_tuples
    if port is not None and took < port.spout_tuples:
        why.append(f"took {took:,} of the {port.spout_tuples:,} spout tuples the port took")
    elif port is None and run.stop_reason not in (EXHAUSTED, "running") and not gave_up:
        why.append(f"stopped early ({run.stop_reason})")
    if run.pending_trees:
        why.append(f"{run.pending_trees:,} tuple trees still pending at the end")
    return "; ".join(why)


def losses(legacy: Any, port: Any | None) -> list[str]:
    """What the legacy side lost and the port set aside, one fact a line (module doc)."""
    if legacy is None:
        return []
    out = []
    for name, n in restarts(legacy).items():
        lost = legacy.components[name].lost
        out.append(f"{name} restarted {n} time{'s' if n != 1 else ''} (its in-memory state "
                   "started again from initialize())"
                   + (f", {lost:,} queued tuple(s) lost with it" if lost else ""))
    short = port.spout_tuples - legacy.spout_tuples if port is not None else 0
    gave_up = sum(s.gave_up for s in legacy.components.values())
    if short > 0 and port is not None:
        out.append(f"{short:,} spout tuple(s) never taken by the legacy ({legacy.spout_tuples:,} "
                   f"of {port.spout_tuples:,})")
    if gave_up:
        out.append(f"{gave_up:,} poison tuple(s) the legacy gave up replaying")
    elif port is None and legacy.stop_reason not in (EXHAUSTED, "running"):
        out.append(f"the legacy run stopped early ({legacy.stop_reason})")
    for name, stats in sorted(port.components.items()) if port is not None else ():
        if stats.dead_lettered:
            out.append(f"the port dead-lettered {stats.dead_lettered:,} in {name} (poison)")
    return out
