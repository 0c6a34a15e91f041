"""When a local run stops pulling: its bounds, checked once per scheduler round.

The engine is a bounded simulation, Storm is not; ``pull_bound`` says which bound ended
the pull phase (then the engine drains, ``engine.py``):

- ``max_tuples=N``: exactly N *new* spout tuples in all (replays of a known
  msg_id do not count), split over spouts and spout tasks as on the Spark
  engine (``stormshift.engines.budget``): a task is no longer asked once it
  took its target, and emits of one ``next_tuple`` past it are held back
  (delivered only if the target grows, when another task of the spout ends).
- ``duration_secs``: stop calling ``next_tuple`` after that much engine time.
- sources exhausted: a spout whose ``next_tuple`` raised ``StopIteration`` /
  ``EndOfInput`` is never asked again (it still gets ``ack``/``fail``).
- idle sources: no new spout tuple for ``stormshift.idle_timeout_secs`` of engine
  time (default 10) with nothing in flight, and no ``duration_secs`` bound: a spout
  that never signals end of input (one that swallows its own ``StopIteration``)
  ends the pull phase with a warning naming it, instead of a hang.
- a stop request: ``request_stop(reason)`` (thread-safe; e.g. a caller's wall-clock
  budget) is honoured between two calls into user code.

``targets_now`` and ``budget_spent`` are ``--max-tuples``' share per spout task (as the
Spark engine splits it: ``engines/budget.py``); ``idle_sources`` and ``idle_cause`` the
idle bound and the warning that names each spout that never said it was done. Split from
``engine.py`` (the scheduler's loop) because these are the run's stop rules, not its loop.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stormshift.engines.budget import spout_budgets, task_targets
from stormshift.engines.local.acker import Acker
from stormshift.engines.local.tasks import TaskSet
from stormshift.engines.summary import RunSummary
from stormshift.topology.graph import TopologyGraph

__all__ = ["EXHAUSTED", "budget_spent", "idle_cause", "idle_sources", "pull_bound", "targets_now"]

EXHAUSTED = "sources exhausted"


def pull_bound(tasks: TaskSet, summary: RunSummary, elapsed_ms: int, max_tuples: int | None,
               duration_ms: int | None) -> str:
    """The bound that ends the pull phase now, or "" (module doc), in this order."""
    if max_tuples is not None and summary.spout_tuples >= max_tuples:
        return f"max_tuples={max_tuples} reached"
    if duration_ms is not None and elapsed_ms >= duration_ms:
        return f"duration {duration_ms / 1000:g}s reached"
    if tasks.all_spouts_exhausted():
        return EXHAUSTED
    if max_tuples is not None and budget_spent(tasks):
        return f"max_tuples={max_tuples}: every spout task took its share or its input ended"
    return ""


def targets_now(graph: TopologyGraph, tasks: TaskSet, max_tuples: int) -> dict[tuple[str, int], int]:
    """Each spout task's ``--max-tuples`` target now (module doc)."""
    budgets = spout_budgets(max_tuples, [s.name for s in graph.spouts])
    targets: dict[tuple[str, int], int] = {}
    for spout in graph.spouts:
        keys = [(spout.name, i) for i in range(spout.par)]
        consumed = [tasks.taken[k] for k in keys]
        ended = [tasks.spout_ended(k) for k in keys]
        targets.update(zip(keys, task_targets(budgets[spout.name] or 0, consumed, ended)))
    return targets


def budget_spent(tasks: TaskSet) -> bool:
    """No spout task can take another tuple (shares of ended spouts stay unused)."""
    targets = tasks.targets or {}
    return all(tasks.taken[k] >= t or tasks.spout_ended(k) for k, t in targets.items())


def idle_sources(tasks: TaskSet, summary: RunSummary, acker: Acker, conf: Mapping[str, Any],
                 idle_ms: int, limit_ms: int) -> str:
    """A stop reason once spouts emitted nothing new for ``idle_ms`` with nothing in
    flight (module doc); the warning names each spout that never said it was done,
    with the cause the run can see (``idle_cause``)."""
    if idle_ms < limit_ms or len(acker) or not tasks.idle():
        return ""
    idle = f"{limit_ms / 1000:g}s"
    for name in tasks.unfinished_spouts():
        advice = getattr(tasks.hosts[(name, 0)].instance, "idle_advice", None)
        summary.warn(idle_cause(name, summary.components[name].gave_up,
                                     conf.get("stormshift.max_replays", 10), idle,
                                     tasks.graph.component(name).capabilities.signals_end,
                                     advice() if callable(advice) else None))
    return f"sources idle for {idle}"


def idle_cause(spout: str, gave_up: int, max_replays: Any, idle: str,
               signals_end: bool = True, builtin: str | None = None) -> str:
    """Why ``spout`` never signalled end of input, as far as the run can tell: tuples the
    engine gave up replaying (a reliable spout waits for their ack or fail for ever), else a
    built-in source's own reason (``builtin``: its ``idle_advice``), else a spout whose code
    cannot end its input (``Capabilities.signals_end``), else one that does not raise
    ``StopIteration`` at the end of its input."""
    if gave_up:
        return (f"spout {spout} is still waiting for {gave_up:,} tuple(s) the engine gave up "
                f"replaying (each failed more than stormshift.max_replays={max_replays} "
                "times, see the errors and fails of the bolts above): a reliable spout never "
                "gets their ack or fail, so it cannot signal end of input; the run ended after "
                f"{idle} without new tuples. Fix the bolt that fails them, or raise -o "
                "stormshift.max_replays=N.")
    if builtin is not None:
        return (f"spout {spout} emitted nothing new for {idle} of engine time and never "
                f"signalled end of input: {builtin}; the run ended as if its input were done "
                "(-o stormshift.idle_timeout_secs=N waits longer).")
    never = "" if signals_end else (" (its code never raises StopIteration or EndOfInput, "
                                    "nor calls next() without a default)")
    return (f"spout {spout} emitted nothing new for {idle} of engine time and never "
            f"signalled end of input{never}: the run ended as if its input were done. Fix: raise "
            "StopIteration (or stormshift.adapters.host.EndOfInput) from next_tuple when the "
            "input is used up (a spout that catches StopIteration itself never ends); or set "
            "-o stormshift.idle_timeout_secs=N for a slower source.")
