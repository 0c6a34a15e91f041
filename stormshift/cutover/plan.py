"""What a cut-over moves, as data, and the pure rules about it (no I/O).

Config, declared once in the port's project (``config.json`` env options, the topology
config, or ``-o``):

- ``cutover.position`` -- per spout, where the legacy records how far it read:
  ``{"kafka_group": GROUP}`` (its consumer group's committed offsets; the default for a
  ``KafkaSpout`` with ``kafka.group_id``), ``{"redis_hash": KEY, "url": URL}`` (field
  partition -> offset: a stream entry id, a file's line count) or ``{"file": PATH}`` (a
  JSON object of the same), or ``{"hook": "module:function"}`` (``function(conf)`` returns
  the offsets; ``"hook_back"`` gets ``(conf, offsets)`` at hand-back).
- ``cutover.seed`` -- per bolt, its state in the legacy's store and what it becomes in the
  port: a state map ``{"map": NAME, "kind": "opaque", "from": {"redis_zset": KEY}, "value":
  "int"}`` or a dict attribute of the bolt ``{"attr": NAME, "from": ..., "value": "int"}``
  (``attrs.py``); ``from`` also ``redis_hash``, ``redis_keys`` (a key prefix) or ``hook``
  (``function(conf)`` returns key -> value; ``hook_back`` gets ``(conf, values)``);
  ``url``: the store's server; ``key`` ``str`` (default) or ``int``: the keys' type.
- ``cutover.sink`` -- the legacy's output target the port writes (``state/target.py``).

Positions are the spouts' own offsets (the position *after* the last record read), so a
Kafka committed offset (the next record to read) is one more than the spout's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from stormshift.errors import TopologyError

__all__ = ["ATTR", "POSITION_KEY", "SEED_KEY", "Seed", "from_kafka", "key_to_port",
           "position_spec", "refusal", "seeds_of", "to_kafka", "to_legacy", "to_port"]

POSITION_KEY = "cutover.position"
SEED_KEY = "cutover.seed"
_STORES = ("redis_zset", "redis_hash", "redis_keys", "hook")
_VALUES = ("int", "float", "str", "json")
_MAP_KINDS = ("opaque", "transactional", "plain")
_KEYS = ("str", "int")
ATTR = "attribute"  # a Seed's kind when it seeds a dict attribute, not a state map


@dataclass(frozen=True, eq=False)
class Seed:
    """One bolt's state map (``kind`` a map kind) or dict attribute (``kind`` ``ATTR``),
    named ``map``, seeded from (and handed back to) the legacy's store."""

    component: str
    map: str
    kind: str
    store: str  # one of _STORES
    name: str  # the key, prefix or hook "module:function"
    value: str = "int"
    url: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    key: str = "str"

    @property
    def is_attr(self) -> bool:
        return self.kind == ATTR


def seeds_of(conf: Mapping[str, Any], bolts: set[str]) -> list[Seed]:
    """The ``cutover.seed`` entries (TopologyError: one line with the fix)."""
    out = []
    for component, spec in dict(conf.get(SEED_KEY) or {}).items():
        src = dict((spec or {}).get("from") or {})
        stores = [s for s in _STORES if s in src]
        ok = isinstance(spec, Mapping)
        value = spec.get("value", "int") if ok else None
        key = spec.get("key", "str") if ok else None
        holders = [h for h in ("map", "attr") if ok and spec.get(h)]
        kind = (spec.get("kind", "opaque") if holders == ["map"] else ATTR) if ok else None
        if (component not in bolts or len(holders) != 1 or len(stores) != 1
                or value not in _VALUES or key not in _KEYS
                or kind not in (*_MAP_KINDS, ATTR) or (kind == ATTR and "kind" in spec)):
            raise TopologyError(
                f"{SEED_KEY} entry {component!r} must name a bolt of the port, either its state "
                f"map (map, kind {'/'.join(_MAP_KINDS)}) or its dict attribute (attr), one "
                f"legacy store in from ({', '.join(_STORES)}), a value of {list(_VALUES)} and "
                f"a key of {list(_KEYS)}; got {spec!r}",
                fix=f'e.g. "{SEED_KEY}": {{"count_bolt": {{"attr": "counts", "from": '
                    '{"redis_zset": "words"}, "value": "int"}}')
        out.append(Seed(component, str(spec[holders[0]]), str(kind), stores[0],
                        str(src[stores[0]]), str(value), src.get("url"),
                        {k: v for k, v in src.items() if k not in (*_STORES, "url")}, str(key)))
    return out


def position_spec(conf: Mapping[str, Any], spout: str) -> dict[str, Any]:
    """Where spout ``spout``'s legacy records its position (module doc)."""
    given = dict(conf.get(POSITION_KEY) or {}).get(spout)
    if given:
        return dict(given)
    if conf.get("kafka.group_id"):
        return {"kafka_group": str(conf["kafka.group_id"])}
    raise TopologyError(
        f"spout {spout!r}: {POSITION_KEY} does not say where the legacy records its position",
        component=spout,
        fix=f'e.g. "{POSITION_KEY}": {{"{spout}": {{"kafka_group": "GROUP"}}}} (or redis_hash, '
            'file, hook)')


def to_port(raw: Any, how: str) -> Any:
    """A legacy store's value (text or a score) as the port's state holds it."""
    text = raw.decode() if isinstance(raw, bytes) else raw
    if how == "int":
        return int(float(text)) if not isinstance(text, int) else text
    if how == "float":
        return float(text)
    if how == "json":
        return json.loads(text) if isinstance(text, str) else text
    return str(text)


def key_to_port(raw: Any, how: str) -> Any:
    """A legacy store's key (member, field, key suffix) as the port's state keys it."""
    text = raw.decode() if isinstance(raw, bytes) else raw
    return int(text) if how == "int" and not isinstance(text, int) else text


def to_legacy(value: Any, how: str) -> str:
    """The inverse of :func:`to_port`: the text the legacy's store holds."""
    if how == "json":
        return json.dumps(value, sort_keys=True)
    if how == "int":
        return str(int(value))
    if how == "float":
        return repr(float(value))
    return str(value)


def from_kafka(committed: Mapping[str, int]) -> dict[str, int]:
    """A group's committed offsets (next record to read; negative: none) as spout offsets
    (last record read). Partitions without a committed offset are left out: they start
    where the spout's ``kafka.start`` says."""
    return {p: int(c) - 1 for p, c in committed.items() if int(c) >= 0}


def to_kafka(offsets: Mapping[str, Any]) -> dict[str, int]:
    """Spout offsets as the offsets to commit to a group."""
    return {p: int(o) + 1 for p, o in offsets.items()}


def refusal(first: Mapping[str, Any], second: Mapping[str, Any], settle_secs: float,
            members: int = 0, group: str | None = None) -> str | None:
    """Why a cut-over must not happen now, or None: the legacy still moves when its
    consumer group has live members or its position changed between two reads
    ``settle_secs`` apart (an offset committed meanwhile means its tasks still run)."""
    if members:
        return (f"the legacy still consumes: consumer group {group!r} has {members} live "
                "member(s); deactivate or kill the legacy topology first")
    moved = sorted(p for p in set(first) | set(second) if first.get(p) != second.get(p))
    if moved:
        return (f"the legacy still consumes: its position moved in the last {settle_secs:g} s "
                f"({len(moved)} partition(s), e.g. {moved[0]}: {first.get(moved[0])} -> "
                f"{second.get(moved[0])}); deactivate or kill the legacy topology first")
    return None
