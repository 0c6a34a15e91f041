"""Where the port stands: the offsets of its last committed batch, per spout; and what a
seeded piece of its state holds now (``port_values``: a state map's committed entries, or
a dict attribute merged over the tasks' committed snapshots).

The driver records ``committed = txid`` in Redis before Spark's own commit log, so the
committed txid, less the checkpoint's base, names the batch whose planned offsets
(Spark's offset log) are what the port has consumed. Before its first batch the port
stands where the cut-over started it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from stormshift.state.client import Redis
from stormshift.state.commit import CommitLog
from stormshift.topology.graph import TopologyGraph

__all__ = ["port_position", "port_values"]


def port_values(graph: TopologyGraph, r: Redis, namespace: str, seed: Any,
                record: Mapping[str, Any]) -> dict[Any, Any]:
    """The port's committed values for ``seed`` (key -> value), what a hand-back writes."""
    if not seed.is_attr:
        from stormshift.state.inspect import map_items

        return {k: v for k, (v, _t) in map_items(r, namespace, seed.component, seed.map,
                                                  seed.kind).items()}
    from stormshift.cutover.attrs import committed_values
    from stormshift.state.snapshots import SnapshotStore, run_key

    key, _where = run_key(graph.config, str(record.get("checkpoint", "")), make=False)
    par = SnapshotStore(r, namespace, key).par_of(seed.component) or graph.component(
        seed.component).par
    return committed_values(r, namespace, key, seed.component, seed.map, par)


def port_position(r: Redis, namespace: str, record: Mapping[str, Any]) -> tuple[int, dict[str, dict[str, Any]]]:
    """``(committed txid, spout -> partition -> offset)`` of the port now."""
    from stormshift.engines.spark import batch_offsets

    committed = CommitLog(r, namespace).committed()
    start: dict[str, dict[str, Any]] = {s: dict(o) for s, o in record.get("start", {}).items()}
    checkpoint = str(record.get("checkpoint", ""))
    try:
        with open(os.path.join(checkpoint, "stormshift-checkpoint-id"), encoding="utf-8") as fh:
            ck_id = fh.read().strip()
    except OSError:
        return committed, start
    base = CommitLog(r, namespace).checkpoints().get(ck_id)
    if base is None or committed < base:
        return committed, start
    sources = batch_offsets(os.path.join(checkpoint, "spark"), committed - base) or []
    for spout, offsets in start.items():
        for source in sources:
            planned = source.get("p") if isinstance(source, dict) else None
            if planned and set(offsets) <= set(planned):
                offsets.update(planned)
                break
        start[spout] = offsets
    return committed, start
