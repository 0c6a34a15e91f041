"""Every Redis key name and the state format version, in one place (scripts: lua.py).

Layout (format version ``FORMAT_VERSION``). ``ns`` is the state namespace (one per topology):

* ``ss:{ns}:commit``       hash ``committed`` -> txid, ``format`` -> version
* ``ss:{ns}:checkpoints``  hash checkpoint id -> txid base
* ``ss:{ns}:owner``        hash ``topology`` -> name, ``fingerprint``, ``components`` (state/owner.py)
* ``ss:{ns}:lease``        hash: the live run of the namespace (state/lease.py, lua_lease.py)
* ``ss:{ns}:epochs``       hash ``component:task`` -> epoch (never expires)
* ``ss:{ns}:par``          hash component -> parallelism its snapshots were cut for
* ``ss:{ns}:dlq``          stream of dead letters; ``ss:{ns}:dlq-ids`` digest -> entry id
* ``ss:{ns}:cutover``      hash: the namespace's cut-over record (``cutover/record.py``)
* ``ss:{ns:g}:fence``      hash ``component:task`` -> epoch, ``__committed`` -> txid
* ``ss:{ns:g}:m:C:NAME``   hash user key -> record of map NAME of component C
* ``ss:{ns:g}:snap:C:T``   hash version -> signed base or delta of task T of component C
* ``ss:{ns:g}:t:C:T:SUF``  keys owned by one task (write-ahead logs, sinks)
* ``ss:{ns:g}:dd:NAME:..`` dedup buckets / Bloom segments

``g`` is one of ``KEY_GROUPS`` key groups. Everything a write script touches
lives in one group, so each script's keys share one hash slot and the layout
works unchanged on Redis Cluster. Each group carries its own copy of the
fence (epochs and committed txid): acquiring an epoch writes it to every
group before the attempt writes anything.
"""

from __future__ import annotations

import re
import zlib

# 2: snapshots are chains of a base and deltas (fields b:T, d:T:P; format 1 wrote a
# bare txid, read as a base). Format-1 code cannot read format-2 snapshots.
# 3: a keyed state object (a windowed bolt's windows) is stored as per-key entries
# (``state/keyed.py``: ``KeyedParts`` in bases, a "keyed" section in deltas); format-2
# code cannot read it. Format-2 snapshots (a windowing state pickled whole) are read.
# 4: those entries are stored packed, each its own pickle (``KeyedParts.packed``, a
# delta's ``keyed_packed``); format-3 code cannot read them. Format-3 ones are read.
FORMAT_VERSION = 4
KEY_GROUPS = 64
PREFIX = "ss"
COMMITTED_FIELD = "__committed"
_NS_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,100}$")


def check_name(kind: str, value: str) -> str:
    """Refuse names that would break hash tags or key parsing."""
    if not _NS_RE.match(value):
        raise ValueError(
            f"state {kind} {value!r} is not allowed: use 1-100 characters from "
            "A-Z a-z 0-9 _ . - (no braces, colons or spaces)"
        )
    return value


def group_of(field: bytes) -> int:
    """Key group of an encoded user key (crc32: stable across processes, unlike hash())."""
    return zlib.crc32(field) % KEY_GROUPS


def task_group(component: str, task_index: int) -> int:
    """The key group holding one task's snapshots and task-owned keys."""
    return zlib.crc32(f"{component}:{task_index}".encode()) % KEY_GROUPS


def name_group(name: str) -> int:
    """The key group of a namespace-wide object such as a dedup filter."""
    return zlib.crc32(name.encode()) % KEY_GROUPS


def who(component: str, task_index: int) -> str:
    """Field naming one task in the epoch and fence hashes."""
    return f"{component}:{task_index}"


def ns_key(ns: str, suffix: str) -> str:
    return f"{PREFIX}:{{{ns}}}:{suffix}"


def metrics_key(ns: str) -> str:
    """The last metrics board of the namespace's run (JSON, ``metrics/records.py``): what
    ``stormshift top`` reads; not state, never fenced."""
    return ns_key(ns, "metrics")


def stats_key(ns: str, txid: int) -> str:
    """The Spark tasks' counters of batch ``txid`` (hash ``member:task`` -> record):
    written by each task, read by the driver (``engines/spark/task/counters.py``)."""
    return ns_key(ns, f"spark:stats:{txid}")


def sink_marker_key(ns: str, txid: int, component: str, task_index: int) -> str:
    """Marks that one task wrote its leaf emits of batch ``txid`` to a ``redis:`` sink
    (``engines/spark/task/sink.py``): a re-run attempt writes them once."""
    return stats_key(ns, txid) + f":sink:{component}:{task_index}"


def commit_key(ns: str) -> str:
    return ns_key(ns, "commit")


def checkpoints_key(ns: str) -> str:
    return ns_key(ns, "checkpoints")


def owner_key(ns: str) -> str:
    """Hash: the topology this namespace's state belongs to (``state/owner.py``)."""
    return ns_key(ns, "owner")


def lease_key(ns: str) -> str:
    """Hash: the one live run of this namespace (``state/lease.py``): the commit record's
    write is conditional on its holder and epoch."""
    return ns_key(ns, "lease")


def lease_pattern() -> str:
    """SCAN pattern of every namespace's lease (``stormshift ps``)."""
    return f"{PREFIX}:{{*}}:lease"


def epochs_key(ns: str) -> str:
    return ns_key(ns, "epochs")


def par_key(ns: str) -> str:
    return ns_key(ns, "par")


def dlq_key(ns: str) -> str:
    return ns_key(ns, "dlq")


def dlq_ids_key(ns: str) -> str:
    return ns_key(ns, "dlq-ids")


def dlq_txid_key(ns: str, txid: int) -> str:
    """Hash dead-letter entry id -> digest of the entries of txid (until it commits)."""
    return ns_key(ns, f"dlq-tx:{int(txid)}")


def redrive_key(ns: str) -> str:
    """Stream of dead letters waiting to be sent back (``state/redrive.py``)."""
    return ns_key(ns, "redrive")


def redrive_claims_key(ns: str) -> str:
    """Hash txid -> how many redrive entries that batch claimed."""
    return ns_key(ns, "redrive-claims")


def redrive_txid_key(ns: str, txid: int) -> str:
    """Stream of the redrive entries batch ``txid`` claimed."""
    return ns_key(ns, f"redrive-tx:{int(txid)}")


def group_key(ns: str, group: int, suffix: str) -> str:
    return f"{PREFIX}:{{{ns}:{group}}}:{suffix}"


def fence_key(ns: str, group: int) -> str:
    return group_key(ns, group, "fence")


def map_key(ns: str, group: int, component: str, name: str) -> str:
    return group_key(ns, group, f"m:{component}:{name}")


def snapshot_key(ns: str, component: str, task_index: int) -> str:
    return group_key(ns, task_group(component, task_index), f"snap:{component}:{task_index}")


def task_key(ns: str, component: str, task_index: int, suffix: str) -> str:
    """A key owned by one task (WAL, sink), in the slot of that task's fence."""
    return group_key(ns, task_group(component, task_index), f"t:{component}:{task_index}:{suffix}")


def dedup_key(ns: str, name: str, kind: str, slot: int) -> str:
    return group_key(ns, name_group(name), f"dd:{name}:{kind}:{slot}")


def all_keys_pattern(ns: str) -> list[str]:
    """SCAN patterns covering every key of a namespace (namespace-wide and grouped)."""
    return [f"{PREFIX}:{{{ns}}}:*", f"{PREFIX}:{{{ns}:*}}:*"]


def namespace_records_pattern() -> str:
    """SCAN pattern of every namespace's namespace-wide keys (commit records, epochs, ...)."""
    return f"{PREFIX}:{{*}}:*"


def parse_key(key: str) -> tuple[str, int | None, str] | None:
    """``(namespace, group or None, suffix)`` of one of our keys, else None."""
    m = re.match(r"^ss:\{([^}:]+)(?::(\d+))?\}:(.*)$", key)
    if not m:
        return None
    return m.group(1), (int(m.group(2)) if m.group(2) else None), m.group(3)


# Lua lives in lua.py (one module for every script); re-exported so callers need one import.
from stormshift.state.lua import FENCED_COMMANDS, SCRIPTS

__all__ = [
    "FENCED_COMMANDS",
    "FORMAT_VERSION",
    "KEY_GROUPS",
    "SCRIPTS",
    "all_keys_pattern",
    "check_name",
    "checkpoints_key",
    "commit_key",
    "cutover_key",
    "dedup_key",
    "dlq_ids_key",
    "dlq_key",
    "dlq_txid_key",
    "epochs_key",
    "fence_key",
    "group_of",
    "kafka_target_key",
    "lease_key",
    "lease_pattern",
    "map_key",
    "metrics_key",
    "name_group",
    "namespace_records_pattern",
    "owner_key",
    "par_key",
    "parse_key",
    "redrive_claims_key",
    "redrive_key",
    "redrive_txid_key",
    "sink_marker_key",
    "snapshot_key",
    "stats_key",
    "target_guard_key",
    "task_group",
    "task_key",
    "who",
]


def cutover_key(ns: str) -> str:
    """Hash: the cut-over of the legacy to this namespace's port and its hand-back
    (``stormshift/cutover/record.py``): ``record`` (JSON), ``history`` (JSON list)."""
    return ns_key(ns, "cutover")


def kafka_target_key(ns: str, topic: str) -> str:
    """Hash beside the state guarding a Kafka topic the port writes (``state/target_kafka.py``):
    ``component:task`` -> the last txid it produced whole, ``component:task:intent`` -> the
    attempt under way. In the state's server: a topic has no place for it."""
    return ns_key(ns, f"cutover:kafka:{topic}")


def target_guard_key(target: str) -> str:
    """Hash beside a legacy target the port writes (``state/target.py``): ``component:task``
    -> the last txid applied. Named after the target, in the target's own server."""
    return f"{target}:stormshift:txid"
