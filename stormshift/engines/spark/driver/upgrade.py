"""Before any batch: what the new code does to each bolt's stored state, refused or applied.

Runs in the driver (``SparkEngine.run`` and ``stormshift plan``). For each bolt with
committed snapshots it builds one fresh instance of the new code (``initialize()``
runs, as on every task start), passes each task's committed attributes through the
bolt's ``migrate_state`` hook when it has one, and compares them with the fresh
attributes (``state/upgrade.py`` has the words and the rules). ``plan_upgrade`` only
reads; ``apply_upgrade`` writes, per task whose restored state changes (a removed
attribute dropped, a hook's rename), a new base at the committed txid in one
MULTI/EXEC, as ``state/rescale.py`` does for a new par.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from stormshift.errors import MigrationError, StateError
from stormshift.state import keys as K
from stormshift.state.client import Redis
from stormshift.state.commit import CommitLog
from stormshift.state.component import names_in_code, state_at, user_state
from stormshift.state.keyed import stored as stored_form
from stormshift.state.snapshots import SnapshotStore, field_name
from stormshift.state.upgrade import MIGRATE_HOOK, TaskChanges, compare, merge
from stormshift.topology.graph import TopologyGraph

__all__ = ["UpgradePlan", "apply_upgrade", "check_upgrade", "plan_upgrade", "refusal_text"]


@dataclass
class UpgradePlan:
    """Per bolt with stored state, what the new code does to it; ``states``: the per-task
    states to write (only components whose ``rewrite`` is set), cut at ``txid``."""

    txid: int
    components: list[TaskChanges] = field(default_factory=list)
    states: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    unchecked: dict[str, str] = field(default_factory=dict)  # initialize() raised here

    @property
    def refused(self) -> list[TaskChanges]:
        return [c for c in self.components if c.refused]

    def warnings(self) -> list[str]:
        out = [f"component {name!r}: not checked against its stored state, initialize() "
               f"raised in the driver ({why}); its state is restored as stored"
               for name, why in sorted(self.unchecked.items())]
        for c in self.components:
            if c.removed:
                out.append(f"component {c.component!r}: attribute(s) "
                           f"{', '.join(sorted(c.removed))} no longer in the code: dropped from "
                           "its stored state")
            if c.rewrite and c.migrated:
                out.append(f"component {c.component!r}: stored state passed through "
                           f"{MIGRATE_HOOK}() and written back at txid {self.txid}")
        return out


def refusal_text(c: TaskChanges) -> str:
    """One line: what is refused and the fix."""
    what = "; ".join(f"attribute {r.name!r} is stored as {r.stored}, the new code's "
                     f"initialize() makes it {r.fresh}" for _, r in sorted(c.refused.items()))
    return (f"component {c.component!r}: {what}, so a restored task would run the new code on "
            f"state it cannot read. Fix: define {MIGRATE_HOOK}(self, old) on the bolt to "
            "convert it (see migrations_guide/operations.md), or keep the attribute's type, or "
            "discard the state with `stormshift state reset`")


def _fresh(graph: TopologyGraph, component: str) -> Any:
    from stormshift.adapters.host import host_component

    host = host_component(graph, component, 0)
    host.open()
    return host.instance


def _migrate(comp: str, hook: Callable[[dict[str, Any]], Any], old: dict[str, Any]
             ) -> dict[str, Any]:
    arg = copy.deepcopy(old)
    try:
        out = hook(arg)
    except Exception as exc:
        raise MigrationError(f"component {comp!r}: {MIGRATE_HOOK}() raised "
                             f"{type(exc).__name__}: {exc}. Fix the hook (it gets the stored "
                             "attributes by name and returns those to restore)") from exc
    if out is None:
        return arg
    if not isinstance(out, dict) or not all(isinstance(k, str) for k in out):
        raise MigrationError(f"component {comp!r}: {MIGRATE_HOOK}() returned "
                             f"{type(out).__name__}; it must return a dict of attributes by "
                             "name (or None after changing its argument in place)")
    return out


def plan_upgrade(r: Redis, store: SnapshotStore, graph: TopologyGraph) -> UpgradePlan:
    """What the code in ``graph`` does to every bolt's committed state (reads only)."""
    committed = CommitLog(r, store.namespace).committed()
    result = UpgradePlan(committed)
    for comp in graph.bolts:
        par = store.par_of(comp.name) or comp.par
        points = [store.load(comp.name, t, committed + 1) for t in range(par)]
        if all(p is None for p in points):
            continue
        try:
            instance = _fresh(graph, comp.name)
        except Exception as exc:  # noqa: BLE001 - its tasks will say it again, with the batch
            result.unchecked[comp.name] = f"{type(exc).__name__}: {exc}"
            continue
        fresh = user_state(instance)
        hook = getattr(instance, MIGRATE_HOOK) if comp.capabilities.has(MIGRATE_HOOK) else None
        changes = TaskChanges(comp.name, migrated=hook is not None)
        in_code = names_in_code(type(instance))
        states = []
        for point in points:
            stored = state_at(point)
            migrated = _migrate(comp.name, hook, stored) if hook is not None else stored
            keep = compare(changes, migrated, fresh, in_code)
            changes.rewrite = changes.rewrite or not _same(keep, stored)
            states.append(keep)
        result.components.append(merge(changes))
        if changes.rewrite:
            result.states[comp.name] = states
    return result


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    try:
        return a.keys() == b.keys() and all(a[k] == b[k] for k in a)
    except Exception:  # noqa: BLE001 - cannot tell: rewrite
        return False


def check_upgrade(store: SnapshotStore, plan: UpgradePlan, graph: TopologyGraph) -> None:
    """StateError (the reason and the fix) for what the plan refuses, and for a rewrite of
    a component whose par changes in the same run (call before ``rescale.rebalance``)."""
    if plan.refused:
        raise StateError(refusal_text(plan.refused[0]))
    for name in plan.states:
        if store.par_of(name) not in (None, graph.component(name).par):
            raise StateError(
                f"component {name!r}: its code changes its stored state and its par changes in "
                "the same run. Fix: upgrade the code with the old par first, then change par "
                "(two runs)")


def apply_upgrade(r: Redis, store: SnapshotStore, plan: UpgradePlan,
                  dumps: Callable[[Any], bytes]) -> None:
    """Write each rewritten component's task states as new bases at the committed txid (its
    other versions dropped), one MULTI/EXEC per component."""
    ns = store.namespace
    for name, states in plan.states.items():
        pipe = r.pipeline(transaction=True)
        f = field_name(plan.txid)
        for task, state in enumerate(states):
            pipe.delete(K.snapshot_key(ns, name, task))
            pipe.hset(K.snapshot_key(ns, name, task), f,
                      store.signed(name, task, f, dumps(stored_form(state))))
        pipe.execute()
