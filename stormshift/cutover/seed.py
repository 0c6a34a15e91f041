"""Seeding the port's state from the legacy's state, in one transaction.

The seed is written as a committed batch of its own (txid ``seed_txid``: one past the
namespace's committed txid, 0 on a new namespace): each map entry as the map kind stores
it at that txid, each seeded task's snapshot base (its share of the seeded dict
attributes, signed: ``attrs.py``) as version ``seed_txid`` with the par it was split
for, the commit record at that txid and the cut-over record, in ONE MULTI/EXEC together
with the deletion of anything an earlier cut-over left. So the port's first batch (txid
``seed_txid + 1``, its checkpoint adopted) reads the legacy's totals as committed state
and restores the attributes as it restores any committed snapshot; a failure before
EXEC writes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from stormshift.cutover.plan import Seed
from stormshift.cutover.record import record_ops
from stormshift.state import keys as K
from stormshift.state.client import Redis
from stormshift.state.codec import encode_key, encode_value
from stormshift.state.commit import _scan
from stormshift.state.snapshots import field_name
from stormshift.topology.graph import TopologyGraph

__all__ = ["attr_bases", "map_record", "seed_port", "write_seed"]


def map_record(kind: str, value: Any, txid: int) -> bytes:
    """A map entry of ``kind`` holding ``value`` as written by batch ``txid``
    (``state/codec.py``'s record formats; an opaque entry's previous value is absent)."""
    data = encode_value(value)
    if kind == "opaque":
        return b"%d|0|" % txid + data
    if kind == "transactional":
        return b"%d|" % txid + data
    return data


def write_seed(r: Redis, namespace: str, seed_txid: int, seeds: Mapping[Seed, Mapping[Any, Any]],
               record: dict[str, Any],
               bases: Mapping[str, list[bytes]] | None = None) -> int:
    """Replace the namespace's state by ``seeds`` (each map seed's key -> value; attribute
    seeds are in ``bases``: component -> each task's signed base of version
    ``seed_txid``) at ``seed_txid``, with ``record``; returns the entries written."""
    doomed = [*_scan(r, namespace), K.par_key(namespace), K.owner_key(namespace)]
    pipe = r.pipeline(transaction=True)
    for key in doomed:
        pipe.delete(key)
    written = 0
    for component, blobs in sorted((bases or {}).items()):
        for task, blob in enumerate(blobs):
            pipe.hset(K.snapshot_key(namespace, component, task), field_name(seed_txid), blob)
        pipe.hset(K.par_key(namespace), component, len(blobs))
    for seed, values in seeds.items():
        if seed.is_attr:
            written += len(values)
            continue
        by_key: dict[str, dict[bytes, bytes]] = {}
        for key, value in values.items():
            field = encode_key(key)
            target = K.map_key(namespace, K.group_of(field), seed.component, seed.map)
            by_key.setdefault(target, {})[field] = map_record(seed.kind, value, seed_txid)
            written += 1
        for target, mapping in sorted(by_key.items()):
            pipe.hset(target, mapping=mapping)  # type: ignore[arg-type]
    pipe.hset(K.commit_key(namespace), mapping={"committed": seed_txid, "format": K.FORMAT_VERSION})
    pipe.hset(K.cutover_key(namespace), mapping=record_ops(r, namespace, record))
    pipe.execute()
    return written


def attr_bases(graph: TopologyGraph, r: Redis, ns: str, checkpoint: str, seed_txid: int,
               values: Mapping[Seed, Mapping[Any, Any]]) -> dict[str, list[bytes]]:
    """Each attribute-seeded bolt's per-task snapshot bases at ``seed_txid`` (its share of
    every seeded attribute, ``attrs.py``), signed with the key the run will use."""
    from stormshift.cutover.attrs import attr_template, base_payloads, split_values
    from stormshift.state.snapshots import SnapshotStore, run_key

    by_comp: dict[str, dict[str, list[Any]]] = {}
    for seed, held in values.items():
        if seed.is_attr:
            comp = graph.component(seed.component)
            template = attr_template(graph, seed.component, seed.map)
            by_comp.setdefault(seed.component, {})[seed.map] = split_values(comp, held, template)
    if not by_comp:
        return {}
    store = SnapshotStore(r, ns, run_key(graph.config, checkpoint)[0])
    field = field_name(seed_txid)
    return {name: [store.signed(name, task, field, payload) for task, payload in
                   enumerate(base_payloads(graph.component(name).par, attrs))]
            for name, attrs in by_comp.items()}


def seed_port(graph: TopologyGraph, r: Redis, ns: str, starts: Mapping[str, Any], checkpoint: str,
              force: bool) -> tuple[dict[str, Any], int]:
    """Read every ``cutover.seed`` from the legacy's store and write it as the port's
    committed state at the next txid, with the live cut-over record (``starts``: where
    each spout starts); returns ``(record, entries written)``."""
    from stormshift.cutover.legacy import read_store
    from stormshift.cutover.plan import seeds_of
    from stormshift.cutover.record import LIVE
    from stormshift.state.commit import CommitLog

    seeds = seeds_of(graph.config, {b.name for b in graph.bolts})
    values = {s: read_store(s, r, graph.component(s.component).config) for s in seeds}
    seed_txid = CommitLog(r, ns).committed() + 1
    bases = attr_bases(graph, r, ns, checkpoint, seed_txid, values)
    record = {"status": LIVE, "at_ms": int(time.time() * 1000), "checkpoint": checkpoint,
              "topology": graph.name, "start": dict(starts), "seed_txid": seed_txid,
              "forced": force,
              "seeded": {f"{s.component}.{s.map}": len(v) for s, v in values.items()}}
    return record, write_seed(r, ns, seed_txid, values, record, bases)
