"""Keyed state maps on the local engine: in memory, one set per component.

A bolt's ``stormshift.state.opaque_map(...)`` handle finds its store through the running
task scope (``state/maps.py``); on Spark that is the batch's ``TaskScope`` (Redis, txids,
fencing). The local engine has no batches and no Redis, so :class:`LocalMaps` stands in
for the scope around every call into a bolt task (``tasks.TaskSet._call_bolt``): the same
``MapBuffer`` logic, whose pending writes are never flushed and so *are* the map. Without
it a ported bolt that uses a map could not run with Storm semantics (it raised
``StateError``), and a shadow could not put the port on the local engine.

Storm has no transactions: a replayed tuple's writes apply again (at-least-once, as for a
legacy bolt's dict), and the maps survive a task's crash (they stand for Redis, not for the
crashed process's memory). Maps are per component, shared by its tasks, as on Spark.
"""

from __future__ import annotations

from typing import Any

from stormshift.state.maps import MapBuffer

__all__ = ["LocalMaps"]


class LocalMaps:
    """The maps of one component: ``buffer``/``read`` are what a ``MapBuffer`` asks of the
    scope it belongs to; ``values()`` reads every map back (the run's final state)."""

    def __init__(self) -> None:
        self.buffers: dict[str, MapBuffer] = {}

    def buffer(self, name: str, kind: str) -> MapBuffer:
        buf = self.buffers.get(name)
        if buf is None:
            buf = self.buffers[name] = MapBuffer(self, name, kind)
        return buf

    def read(self, buf: MapBuffer, keys: list[Any]) -> None:
        """Nothing is stored below the buffer: every key read is absent there."""
        for key in keys:
            buf.absorb(key, None, 0)

    def values(self) -> dict[str, dict[Any, Any]]:
        """Each map's keys and values (keys only ever read, never written, are absent)."""
        return {name: {key: buf.get(key) for key in buf.ops}
                for name, buf in self.buffers.items()}
