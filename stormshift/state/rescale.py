"""Re-split a legacy bolt's dict state when its ``par`` changes (or refuse, saying why).

A fields-grouped bolt task only ever sees the keys the grouping routes to it,
and a word-count bolt keys its ``Counter`` by exactly those values. When the
topology asks for another ``par``, each dict attribute of the old tasks'
committed snapshots is re-split by the same routing function as the engine
(``adapters.routing.choose_tasks``: the stable CRC-32 hash, never ``hash()``),
after checking that every key sits on the task the grouping sends it to. A keyed
state object (``state/keyed.py``: a windowed bolt's windows) is re-split the same way
entry by entry, its shared parts merged by its class's rule. Other attributes must
be equal on every old task (then every new task gets them).
Anything else is refused with the reason and the fix, and nothing is written.

Call order (driver, before any batch): ``rebalance`` plans every bolt whose par
changed (``plan`` reads and checks, pure but for reads) and refuses a spout
whose par changed on a checkpoint that committed a batch (its source offsets
are per task); only when every plan passed does it ``apply`` them, each writing
the new bases at the committed txid and the new par in one MULTI/EXEC (single
Redis server; on Redis Cluster the keys span slots and the rescale is refused
by the server). So a refusal leaves every component as it was.
"""

from __future__ import annotations

import pickle
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stormshift.adapters.routing import choose_tasks
from stormshift.errors import StateError
from stormshift.state import keys as K
from stormshift.state.client import Redis
from stormshift.state.commit import CommitLog
from stormshift.state.component import state_at
from stormshift.state.keyed import is_keyed, stored
from stormshift.state.snapshots import SnapshotStore, field_name
from stormshift.topology.graph import ComponentDef, Grouping, GroupingKind

__all__ = ["Plan", "apply", "ensure_par", "plan", "rebalance", "split"]

_DICTS = (dict, Counter, OrderedDict, defaultdict)


@dataclass(frozen=True)
class Plan:
    """The new tasks' states of ``component`` (index = task), cut at txid ``txid``."""

    component: str
    old_par: int
    new_par: int
    txid: int
    states: tuple[dict[str, Any], ...]
    keys: int


def _refuse(comp: ComponentDef, old: int, why: str, windowed: bool = False) -> StateError:
    fix = (f"Fix: feed it with a fields grouping on its window key (Grouping.fields(...), "
           "the same fields as its key_fields), or keep par at "
           f"{old}, or discard its windows with `stormshift state reset`") if windowed else (
        f"Fix: keep par at {old}, or move the bolt's state into a keyed map "
        "(stormshift.state.opaque_map / transactional_map), which rescales freely, or "
        "discard it with `stormshift state reset`")
    what = ("A windowed bolt's windows rescale by their key, which the grouping must tie to "
            "one task" if windowed else
            "Only dict attributes keyed by the bolt's fields-grouping values rescale")
    return StateError(
        f"component {comp.name!r}: its snapshots were taken with par={old}, the topology now "
        f"asks for par={comp.par}, and its in-memory state cannot be re-split: {why}. "
        f"{what}. {fix}")


def _router(comp: ComponentDef, old: int, windowed: bool = False) -> Callable[[Any, int], int]:
    """``route(key, par)``: the task a dict key belongs to; StateError if keys cannot be."""
    groupings = {i.grouping for i in comp.inputs}
    bad = [i for i in comp.inputs if i.grouping.kind is not GroupingKind.FIELDS]
    if bad or not groupings:
        what = f"input {bad[0].source}:{bad[0].stream} is grouped by {bad[0].grouping}" if bad \
            else "it has no input"
        raise _refuse(comp, old, f"{what}, so no key is tied to one task", windowed)
    widths = {len(g.fields) for g in groupings}
    if len(widths) != 1:
        raise _refuse(comp, old, "its inputs group by different numbers of fields", windowed)
    (n,) = widths
    grouping = Grouping(GroupingKind.FIELDS, tuple(f"f{i}" for i in range(n)))
    positions = tuple(range(n))

    def route(key: Any, par: int) -> int:
        values = [key] if n == 1 else list(key)
        if len(values) != n:
            raise TypeError(f"key {key!r} is not a tuple of {n} grouping values")
        (task,) = choose_tasks(grouping, par, values, field_positions=positions,
                               emitter_task_index=0, seq=0)
        return task

    return route


def _empty_like(value: Any) -> Any:
    return defaultdict(value.default_factory) if type(value) is defaultdict else type(value)()


def split(comp: ComponentDef, old: int, states: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """The states of ``comp.par`` new tasks from the ``old`` tasks' ``states``; pure.

    Keys go, in old-task then key order, to the task ``choose_tasks`` picks. StateError
    (nothing split) when a key is on another task than its grouping sends it to, a key
    cannot be routed, or a non-dict attribute differs between old tasks."""
    names = sorted({n for s in states for n in s})
    keyed_names = [n for n in names if any(is_keyed(s.get(n)) for s in states)]
    dict_names = [n for n in names if any(type(s.get(n)) in _DICTS for s in states)
                  and n not in keyed_names]
    shared: dict[str, Any] = {}
    for name in names:
        if name in dict_names or name in keyed_names:
            continue
        values = [s[name] for s in states if name in s]
        if len(values) != len(states) or any(not _same(v, values[0]) for v in values[1:]):
            raise _refuse(comp, old, f"attribute {name!r} is not a dict and differs between "
                                     "the old tasks (a per-task value cannot be divided)")
        shared[name] = values[0]
    keyed = {n: _keyed_parts(comp, old, n, [s.get(n) for s in states]) for n in keyed_names}
    has_keys = any(s.get(n) for s in states for n in dict_names)
    windowed = any(p and p[1] for kparts in keyed.values() for _, p in kparts)
    route = _router(comp, old, windowed) if has_keys or windowed else None
    new = [dict(shared) for _ in range(comp.par)]
    moved = 0
    for name, kparts in keyed.items():
        moved += _split_keyed(comp, old, name, kparts, route, new)
    for name in dict_names:
        first = next(s[name] for s in states if type(s.get(name)) in _DICTS)
        parts = [_empty_like(first) for _ in range(comp.par)]
        for task, state in enumerate(states):
            value = state.get(name)
            if value is None:
                continue
            if type(value) not in _DICTS:
                raise _refuse(comp, old, f"attribute {name!r} is a dict on some tasks only")
            for key, item in value.items():
                try:
                    owner = route(key, old)  # type: ignore[misc]
                    target = route(key, comp.par)  # type: ignore[misc]
                except TypeError as exc:
                    raise _refuse(comp, old, f"attribute {name!r} has key {key!r} that is not "
                                             f"a grouping value ({exc})") from None
                if owner != task:
                    raise _refuse(comp, old, f"attribute {name!r} of task {task} holds key "
                                             f"{key!r}, which the grouping sends to task {owner}: "
                                             "the dict is not keyed by the grouping values")
                parts[target][key] = item
                moved += 1
        for task, part in enumerate(parts):
            new[task][name] = part
    return new, moved


def _same(a: Any, b: Any) -> bool:
    """Equal, or pickled alike (objects without ``__eq__`` unpickled on two tasks)."""
    if a == b:
        return True
    try:
        return pickle.dumps(a) == pickle.dumps(b)
    except Exception:  # noqa: BLE001 - cannot tell: not the same
        return False


def _keyed_parts(comp: ComponentDef, old: int, name: str, values: list[Any]
                 ) -> list[tuple[Any, Any]]:
    """``(class, parts)`` of each old task's keyed object ``name`` (a task without one: none)."""
    present = [v for v in values if v is not None]
    if any(not is_keyed(v) or type(v) is not type(present[0]) for v in present):
        raise _refuse(comp, old, f"attribute {name!r} is a {type(present[0]).__name__} on some "
                                 "tasks only")
    return [(type(v), v.keyed_parts()) if v is not None else (None, None) for v in values]


def _split_keyed(comp: ComponentDef, old: int, name: str, parts: list[Any],
                 route: Callable[[Any, int], int] | None, new: list[dict[str, Any]]) -> int:
    """Each entry of ``name`` to the task its key routes to; each new task's object built
    from the merged shared parts (``cls.keyed_merge``) and its entries. Returns entries moved."""
    cls = next(c for c, _ in parts if c is not None)
    shareds = [p[0] for _, p in parts if p is not None]
    entries: list[dict[Any, Any]] = [{} for _ in range(comp.par)]
    moved = 0
    for task, (_, p) in enumerate(parts):
        for eid, entry in sorted((p[1] if p is not None else {}).items()):
            key = cls.keyed_key(entry)
            try:
                owner = route(key, old)  # type: ignore[misc]
                target = route(key, comp.par)  # type: ignore[misc]
            except TypeError as exc:
                raise _refuse(comp, old, f"attribute {name!r} has key {key!r} that is not a "
                                         f"grouping value ({exc})", True) from None
            if owner != task:
                raise _refuse(comp, old, f"attribute {name!r} of task {task} holds key {key!r}, "
                                         f"which the grouping sends to task {owner}: the windows "
                                         "are not keyed by the grouping values", True)
            entries[target][eid] = entry
            moved += 1
    for task in range(comp.par):
        new[task][name] = cls.from_keyed(cls.keyed_merge(shareds, task, comp.par), entries[task])
    return moved


def plan(r: Redis, store: SnapshotStore, comp: ComponentDef, old: int) -> Plan:
    """Read the old tasks' committed states and split them (StateError: refused)."""
    committed = CommitLog(r, store.namespace).committed()
    states = []
    for task in range(old):
        point = store.load(comp.name, task, committed + 1)
        states.append(state_at(point))
    new, moved = split(comp, old, states)
    return Plan(comp.name, old, comp.par, committed, tuple(new), moved)


def apply(r: Redis, store: SnapshotStore, p: Plan, dumps: Callable[[Any], bytes]) -> None:
    """Write ``p``: every old snapshot hash dropped, one base per new task at ``p.txid``,
    the new par recorded, in one MULTI/EXEC."""
    ns = store.namespace
    pipe = r.pipeline(transaction=True)
    for task in range(max(p.old_par, p.new_par)):
        pipe.delete(K.snapshot_key(ns, p.component, task))
    field = field_name(p.txid)
    for task, state in enumerate(p.states if p.txid >= 0 else ()):  # nothing committed yet
        pipe.hset(K.snapshot_key(ns, p.component, task), field,
                  store.signed(p.component, task, field, dumps(stored(state))))
    pipe.hset(K.par_key(ns), p.component, p.new_par)
    pipe.execute()


def _needs_plan(store: SnapshotStore, comp: ComponentDef) -> int | None:
    """The old par when ``comp``'s snapshots were cut for another par, else None."""
    old = store.par_of(comp.name)
    if old is None or old == comp.par or not any(
            store._versions(comp.name, t) for t in range(old)):
        return None
    return old


def ensure_par(r: Redis, store: SnapshotStore, comp: ComponentDef,
               dumps: Callable[[Any], bytes]) -> Plan | None:
    """Record ``comp.par``; when the snapshots were cut for another par, re-split them
    (the ``Plan`` applied) or raise StateError naming the reason and the fix."""
    old = _needs_plan(store, comp)
    if old is None:
        store.check_par(comp.name, comp.par)
        return None
    p = plan(r, store, comp, old)
    apply(r, store, p, dumps)
    return p


def _check_spout(r: Redis, store: SnapshotStore, comp: ComponentDef) -> None:
    old = store.par_of(comp.name)
    if old is not None and old != comp.par and CommitLog(r, store.namespace).committed() >= 0:
        raise StateError(
            f"component {comp.name!r}: a spout, run with par={old} on this checkpoint, now asked "
            f"for par={comp.par}; its source offsets in the checkpoint are kept per task, so a "
            f"spout's par is fixed for the checkpoint's life. Fix: keep par at {old} (drop the "
            "--par for it), or start a new checkpoint (--checkpoint NEW_DIR --adopt-state)")


def rebalance(r: Redis, store: SnapshotStore, components: list[ComponentDef],
              dumps: Callable[[Any], bytes]) -> list[Plan]:
    """Give every component its par (``--par`` or the topology's) before any batch: plan all
    the re-splits first, so a refusal (StateError, the reason and the fix) writes nothing;
    then apply them and record every par. Returns the plans applied."""
    for comp in components:
        if comp.is_spout:
            _check_spout(r, store, comp)
    todo = [(c, old) for c in components if not c.is_spout
            for old in [_needs_plan(store, c)] if old is not None]
    plans = [plan(r, store, c, old) for c, old in todo]
    for p in plans:
        apply(r, store, p, dumps)
    for comp in components:
        store.r.hset(K.par_key(store.namespace), comp.name, comp.par)
    return plans
