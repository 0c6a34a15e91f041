"""Seeding a bolt's dict attribute (``self.counts = Counter()``) from the legacy's store.

An unchanged bolt keeps its state in instance attributes, which the port snapshots per
task (``state/snapshots.py``). The legacy's values for one attribute are split over the
port's tasks by the same fields grouping the port routes with (``adapters.routing``'s
stable hash, never ``hash()``): a key lands on the task that will receive its tuples. Each
task's share becomes that task's snapshot *base* at the seed's txid, written in the
seed's one transaction (``seed.py``), so the port's first batch restores it like any
committed state. A hand-back merges the tasks' committed attributes back into one dict.

The pure part (routing, split, merge, the base payloads) is here; reading a fresh
instance for the attribute's type and the tasks' committed attributes are the two thin
shells at the end.
"""

from __future__ import annotations

from collections import Counter, OrderedDict, defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from stormshift.adapters.routing import choose_tasks
from stormshift.errors import TopologyError
from stormshift.state.client import Redis
from stormshift.state.component.pickler import dumps
from stormshift.topology.graph import ComponentDef, Grouping, GroupingKind, TopologyGraph

__all__ = ["DICTS", "attr_template", "base_payloads", "committed_values", "key_router",
           "merge_tasks", "split_values"]

DICTS = (dict, Counter, OrderedDict, defaultdict)


def key_router(comp: ComponentDef) -> Callable[[Any], int]:
    """``route(key)``: the task of ``comp`` that the port's grouping sends ``key``'s tuples
    to (a tuple of values for a grouping on several fields). TopologyError when no key is
    tied to one task: a bolt of par > 1 fed by another grouping than fields."""
    if comp.par == 1:
        return lambda _key: 0
    bad = [i for i in comp.inputs if i.grouping.kind is not GroupingKind.FIELDS]
    widths = {len(i.grouping.fields) for i in comp.inputs}
    if bad or len(widths) != 1:
        why = (f"input {bad[0].source}:{bad[0].stream} is grouped by {bad[0].grouping}" if bad
               else "its inputs group by different numbers of fields")
        raise TopologyError(f"cutover.seed: bolt {comp.name!r} (par {comp.par}) cannot take a "
                            f"seeded attribute: {why}, so no key is tied to one task",
                            component=comp.name,
                            fix="feed it with Grouping.fields(...) on the attribute's key, or "
                                'seed a state map ("map": NAME) instead')
    (n,) = widths
    grouping = Grouping(GroupingKind.FIELDS, tuple(f"f{i}" for i in range(n)))
    positions = tuple(range(n))

    def route(key: Any) -> int:
        values = [key] if n == 1 else list(key)
        if len(values) != n:
            raise TopologyError(f"cutover.seed: bolt {comp.name!r}: key {key!r} is not a tuple "
                                f"of {n} grouping values", component=comp.name,
                                fix="return tuple keys from the seed hook")
        (task,) = choose_tasks(grouping, comp.par, values, field_positions=positions,
                               emitter_task_index=0, seq=0)
        return task

    return route


def _empty_like(template: Any) -> Any:
    if type(template) is defaultdict:
        return defaultdict(template.default_factory)
    return type(template)()


def split_values(comp: ComponentDef, values: Mapping[Any, Any], template: Any) -> list[Any]:
    """``values`` split over ``comp``'s tasks (index = task), each part of ``template``'s
    type (a ``Counter`` stays a ``Counter``); keys in sorted order per part; pure."""
    route = key_router(comp)
    parts = [_empty_like(template) for _ in range(comp.par)]
    for key in sorted(values, key=repr):
        parts[route(key)][key] = values[key]
    return parts


def merge_tasks(parts: Iterable[Mapping[Any, Any] | None]) -> dict[Any, Any]:
    """The tasks' dicts as one (a hand-back's values); a key on two tasks cannot happen
    under a fields grouping, the later task wins if it does; pure."""
    out: dict[Any, Any] = {}
    for part in parts:
        out.update(part or {})
    return out


def base_payloads(par: int, attrs: Mapping[str, list[Any]]) -> list[bytes]:
    """Each task's snapshot base payload: its share of every seeded attribute (``attrs``:
    name -> one part per task), pickled as ``Snapshotter`` pickles a base (a dict of
    attributes by name)."""
    return [dumps({name: parts[task] for name, parts in sorted(attrs.items())})
            for task in range(par)]


# -- shells -------------------------------------------------------------------------
def attr_template(graph: TopologyGraph, component: str, attr: str) -> Any:
    """The value ``attr`` has in a freshly initialized task of ``component`` (its type
    is the seeded parts'); TopologyError when ``initialize()`` makes no dict there."""
    from stormshift.adapters.host import BoltHost

    host = BoltHost(graph, component, 0)
    host.open()
    value = getattr(host.instance, attr, None)
    if type(value) not in DICTS:
        got = "no such attribute" if value is None else f"a {type(value).__name__}"
        raise TopologyError(f"cutover.seed: bolt {component!r}: attribute {attr!r} after "
                            f"initialize() is {got}, not a dict", component=component,
                            fix=f"make self.{attr} a dict (or Counter) in initialize(), or seed "
                                'a state map ("map": NAME)')
    return value


def committed_values(r: Redis, namespace: str, hmac_key: bytes, component: str, attr: str,
                     par: int) -> dict[Any, Any]:
    """``attr`` of every task of ``component`` as of the last committed batch, merged."""
    from stormshift.state.final import committed_attributes

    return merge_tasks(committed_attributes(r, namespace, hmac_key, component, task).get(attr)
                       for task in range(par))
