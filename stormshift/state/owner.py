"""Which topology a state namespace belongs to, and refusing a run of any other.

A namespace's state (commit record, snapshots, maps, write-ahead logs) only means
something to the topology that wrote it: another topology run on it would commit
txids into it, skip its input and die on a component it does not have. So the
first run records its owner (``ss:{ns}:owner``: the topology's name, a fingerprint
of its components and their names) and every later run checks it before it writes
anything (``check_owner``, then ``record_owner`` once the checkpoint is bound).

Words: the *owner* is the topology named in the record; *takeover* is a run of
another topology on it. Modes (``--reset-state`` / ``--adopt-state``):

- ``strict``: a takeover is refused (``InfraError``, exit 2) naming both topologies;
- ``reset``: the state is discarded anyway, the new topology becomes the owner;
- ``adopt``: the new topology continues the state under its name, unless the state
  holds components it does not have (refused by name: their state would be orphaned).

A namespace written before owners were recorded has none: the next run records it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from stormshift.errors import InfraError
from stormshift.state import keys as K
from stormshift.state.client import Redis
from stormshift.topology.graph import TopologyGraph

__all__ = ["Owner", "check_owner", "checkpoint_namespaces", "fingerprint", "record_owner",
           "recorded_checkpoint", "recorded_owner", "stored_components"]


@dataclass(frozen=True)
class Owner:
    """The record: topology name, fingerprint, component names (sorted)."""

    topology: str
    fingerprint: str
    components: tuple[str, ...]


def fingerprint(graph: TopologyGraph) -> str:
    """What identifies a topology's state layout: its components' names, kinds and classes
    (not their par: a rescale keeps the state). 16 hex digits of a SHA-256."""
    parts = sorted((c.name, c.kind.value, c.class_path) for c in graph)
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def recorded_owner(r: Redis, namespace: str) -> Owner | None:
    """The owner recorded with ``namespace``, None if none is (new or older state)."""
    raw = {_text(k): _text(v) for k, v in r.hgetall(K.owner_key(namespace)).items()}
    if "topology" not in raw:
        return None
    return Owner(raw["topology"], raw.get("fingerprint", ""),
                 tuple(json.loads(raw.get("components", "[]"))))


def stored_components(r: Redis, namespace: str) -> set[str]:
    """Components that have state in ``namespace``: snapshots, maps, task-owned keys, a par."""
    found = {_text(c) for c in r.hkeys(K.par_key(namespace))}
    for pattern in K.all_keys_pattern(namespace):
        for key in r.scan_iter(match=pattern, count=1000):
            parsed = K.parse_key(_text(key))
            if parsed is None or parsed[0] != namespace or parsed[1] is None:
                continue
            kind, _, rest = parsed[2].partition(":")
            if kind in ("snap", "m", "t") and rest:
                found.add(rest.split(":", 1)[0])
    return found


def check_owner(r: Redis, namespace: str, graph: TopologyGraph, mode: str) -> None:
    """Refuse (``InfraError``) a run of ``graph`` on state that belongs to another topology
    (module doc). Reads only: nothing is written whatever it decides."""
    if mode == "reset":
        return
    owner = recorded_owner(r, namespace)
    if owner is not None and owner.topology != graph.name and mode != "adopt":
        raise InfraError(
            f"state namespace {namespace!r} belongs to topology {owner.topology!r}; this run is "
            f"topology {graph.name!r}, so nothing was written. Fix: give {graph.name!r} its own "
            f"--namespace and --checkpoint, or pass --reset-state to discard the state of "
            f"{owner.topology!r}, or --adopt-state to continue it under {graph.name!r}")
    if mode != "adopt":
        return
    missing = sorted(stored_components(r, namespace) - {c.name for c in graph})
    if missing:
        was = owner.topology if owner is not None else "its earlier topology"
        raise InfraError(
            f"state namespace {namespace!r} (of {was!r}) holds state of component(s) "
            f"{', '.join(repr(m) for m in missing)} that topology {graph.name!r} does not have; "
            "--adopt-state continues state only of components with the same name. Fix: keep "
            "those component names, or discard the state with --reset-state")


def record_owner(r: Redis, namespace: str, graph: TopologyGraph, checkpoint_dir: str | None = None) -> None:
    """Record ``graph`` as the owner of ``namespace`` (after ``check_owner`` let it run), and
    the checkpoint dir it runs from (named when another checkpoint is refused)."""
    mapping = {"topology": graph.name, "fingerprint": fingerprint(graph),
               "components": json.dumps(sorted(c.name for c in graph))}
    if checkpoint_dir:
        mapping["checkpoint"] = checkpoint_dir
    r.hset(K.owner_key(namespace), mapping=mapping)


def recorded_checkpoint(r: Redis, namespace: str) -> str | None:
    """The checkpoint dir the namespace's last run bound (None when not recorded)."""
    v = r.hget(K.owner_key(namespace), "checkpoint")
    return _text(v) if v is not None else None


def checkpoint_namespaces(r: Redis, checkpoint_id: str) -> list[str]:
    """Namespaces on this server that have bound ``checkpoint_id`` (sorted)."""
    found = set()
    for key in r.scan_iter(match=K.ns_key("*", "checkpoints"), count=1000):
        parsed = K.parse_key(_text(key))
        if parsed is not None and parsed[1] is None and r.hexists(_text(key), checkpoint_id):
            found.add(parsed[0])
    return sorted(found)
