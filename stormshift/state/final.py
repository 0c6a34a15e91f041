"""Read-only: a bolt's state as its last committed batch left it (shadow runs, tests).

``committed_attributes`` gives a legacy bolt task's attributes at its newest
committed snapshot version: the base folded with its deltas (``state/component/deltas.py``;
every version verified by ``SnapshotStore`` before anything is unpickled, so a
tampered Redis is refused, never unpickled);
``committed_maps`` a component's keyed state maps, name -> key -> value
(``inspect.map_items``: the value the last committed write left). No fencing:
nothing is written.
"""

from __future__ import annotations

from typing import Any

from stormshift.state.client import Redis
from stormshift.state.commit import CommitLog
from stormshift.state.component import state_at
from stormshift.state.inspect import map_items, map_kinds
from stormshift.state.snapshots import SnapshotStore

__all__ = ["committed_attributes", "committed_maps"]


def committed_attributes(r: Redis, namespace: str, hmac_key: bytes | str | None, component: str,
                         task_index: int) -> dict[str, Any]:
    """Attributes by name of the newest committed snapshot of one task ({} if none)."""
    store = SnapshotStore(r, namespace, hmac_key)
    point = store.load(component, task_index, CommitLog(r, namespace).committed() + 1)
    return state_at(point)


def committed_maps(r: Redis, namespace: str, component: str) -> dict[str, dict[Any, Any]]:
    """Every keyed state map of ``component``: name -> key -> value (sorted by name)."""
    names = sorted(name for comp, name in map_kinds(r, namespace) if comp == component)
    return {name: {k: v for k, (v, _txid) in map_items(r, namespace, component, name).items()}
            for name in names}
