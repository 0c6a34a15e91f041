"""Read-only views of state for operators, tests and the testing kit (no fencing needed).

``map_items`` returns what the last write left per key: the value and the
txid that wrote it (``None`` for plain maps), in a deterministic key order.
``describe`` is everything ``stormshift state ls`` shows of one namespace;
``json_default`` renders state and dead-letter values as JSON.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from stormshift.state import keys as K
from stormshift.state.client import Redis
from stormshift.state.codec import committed_view, decode_key, encode_key

__all__ = ["describe", "json_default", "map_get", "map_items", "map_kinds", "namespace_keys",
           "namespaces"]


def _s(x: Any) -> str:
    return x.decode() if isinstance(x, bytes) else str(x)


def namespace_keys(r: Redis, namespace: str) -> Iterator[str]:
    """Every key of a namespace (sorted)."""
    found: set[str] = set()
    for pattern in K.all_keys_pattern(namespace):
        for key in r.scan_iter(match=pattern, count=1000):
            k = _s(key)
            p = K.parse_key(k)
            if p is not None and p[0] == namespace:
                found.add(k)
    return iter(sorted(found))


def namespaces(r: Redis) -> list[str]:
    """Namespaces with a commit record or an epoch counter."""
    out: set[str] = set()
    for key in r.scan_iter(match=K.namespace_records_pattern(), count=1000):
        p = K.parse_key(_s(key))
        if p is not None and p[1] is None:
            out.add(p[0])
    return sorted(out)


def map_kinds(r: Redis, namespace: str) -> dict[tuple[str, str], int]:
    """``(component, map name) -> number of keys``, across all key groups."""
    out: dict[tuple[str, str], int] = {}
    for k in namespace_keys(r, namespace):
        p = K.parse_key(k)
        if p and p[2].startswith("m:"):
            _, comp, name = p[2].split(":", 2)
            out[(comp, name)] = out.get((comp, name), 0) + int(r.hlen(k))
    return dict(sorted(out.items()))


def _kind_of(rec: bytes) -> str:
    head = rec.split(b"|", 2)
    if len(head) == 3 and head[0].isdigit() and head[1].isdigit():
        return "opaque"
    if len(head) >= 2 and head[0].isdigit():
        return "transactional"
    return "plain"


def map_items(r: Redis, namespace: str, component: str, name: str, kind: str | None = None) -> dict[Any, tuple[Any, int | None]]:
    """``key -> (value, txid)`` of one map; ``kind`` is guessed from the records if not given."""
    rows: list[tuple[bytes, Any, int | None]] = []
    for g in range(K.KEY_GROUPS):
        for field, rec in r.hgetall(K.map_key(namespace, g, component, name)).items():
            value, txid = committed_view(kind or _kind_of(rec), rec)
            rows.append((field, value, txid))
    rows.sort(key=lambda x: x[0])
    return {decode_key(f): (v, t) for f, v, t in rows}


def map_get(r: Redis, namespace: str, component: str, name: str, key: Any, kind: str | None = None) -> tuple[Any, int | None] | None:
    """``(value, txid)`` of one key, None if absent."""
    field = encode_key(key)
    rec = r.hget(K.map_key(namespace, K.group_of(field), component, name), field)
    if rec is None:
        return None
    return committed_view(kind or _kind_of(rec), rec)


def json_default(x: Any) -> Any:
    """``json.dumps`` default for state and dead-letter values: bytes as text (or hex), tuples as lists."""
    if isinstance(x, bytes):
        try:
            return x.decode()
        except UnicodeDecodeError:
            return {"hex": x.hex()}
    if isinstance(x, tuple):
        return list(x)
    return repr(x)


def _snapshot_sizes(r: Redis, ns: str) -> dict[str, dict[int, int]]:
    from stormshift.state.snapshots import SnapshotStore

    store = SnapshotStore.__new__(SnapshotStore)  # sizes need no HMAC key: nothing is verified
    store.r, store.namespace = r, ns
    return {f"{c}:{t}": v for (c, t), v in store.sizes().items()}


def describe(r: Redis, ns: str) -> dict[str, Any]:
    """One namespace as plain data: committed txid, checkpoints, epochs, maps and their key
    counts, snapshot sizes, dead letters. StateError if a newer stormshift wrote it."""
    from stormshift.state.commit import CommitLog
    from stormshift.state.deadletter import DeadLetters

    log = CommitLog(r, ns)
    log.check_format()  # a newer layout is not guessed at: StateError with the fix
    epochs = {k.decode(): int(v) for k, v in sorted(r.hgetall(K.epochs_key(ns)).items())}
    return {
        "namespace": ns,
        "committed_txid": log.committed(),
        "checkpoints": log.checkpoints(),
        "epochs": epochs,
        "maps": {f"{c}:{m}": n for (c, m), n in map_kinds(r, ns).items()},
        "snapshots_bytes": _snapshot_sizes(r, ns),
        "dead_letters": DeadLetters(r, ns).count(),
    }
