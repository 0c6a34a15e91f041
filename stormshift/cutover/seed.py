"""Seeding the port's state maps from the legacy's state, in one transaction.

The seed is written as a committed batch of its own (txid ``seed_txid``: one past the
namespace's committed txid, 0 on a new namespace): each map entry as the map kind stores
it at that txid, the commit record at that txid and the cut-over record, in ONE
MULTI/EXEC together with the deletion of anything an earlier cut-over left. So the
port's first batch (txid ``seed_txid + 1``, its checkpoint adopted) reads the legacy's
totals as committed state; a failure before EXEC writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stormshift.cutover.plan import Seed
from stormshift.cutover.record import record_ops
from stormshift.state import keys as K
from stormshift.state.codec import encode_key, encode_value
from stormshift.state.commit import _scan

__all__ = ["map_record", "write_seed"]


def map_record(kind: str, value: Any, txid: int) -> bytes:
    """A map entry of ``kind`` holding ``value`` as written by batch ``txid``
    (``state/codec.py``'s record formats; an opaque entry's previous value is absent)."""
    data = encode_value(value)
    if kind == "opaque":
        return b"%d|0|" % txid + data
    if kind == "transactional":
        return b"%d|" % txid + data
    return data


def write_seed(r: Any, namespace: str, seed_txid: int, seeds: Mapping[Seed, Mapping[Any, Any]],
               record: dict[str, Any]) -> int:
    """Replace the namespace's state by ``seeds`` (each seed's key -> value) at
    ``seed_txid``, with ``record``; returns the entries written."""
    doomed = [*_scan(r, namespace), K.par_key(namespace), K.owner_key(namespace)]
    pipe = r.pipeline(transaction=True)
    for key in doomed:
        pipe.delete(key)
    written = 0
    for seed, values in seeds.items():
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
