"""The legacy's own output target, written by the port exactly once: a txid-guarded sink.

After a cut-over the port writes what the legacy bolt wrote -- a Redis sorted set, a
hash, or string keys under a prefix -- so readers downstream change nothing. Declared
per leaf stream in ``cutover.sink``::

    "cutover.sink": {"count_bolt:default": {"redis_zset": "words", "key": "word",
                                             "value": "count", "op": "set"}}

(``redis_hash`` / ``redis_keys`` for the other shapes; ``op`` ``set`` writes the value,
``add`` adds it; ``url``: the target's server, default the state server). A Kafka topic
the legacy produced to is ``{"kafka_topic": T, "key": "word", "value": ["word", "count"],
"bootstrap_servers": ...}``: one message per emit, keyed by the key field(s) (optional),
the value one field's text or a JSON object of several; written by
``state/target_kafka.py`` with its own guard.

Why a guard beside the target instead of the task's own transaction: the target is the
legacy's store, often another server than the state, so no script can span both. Each
task's emits of one batch go in as ONE script that also records ``component:task ->
txid`` in ``<target>:stormshift:txid`` and writes nothing when that task already applied
a txid at or above this one. A batch's emits are a pure function of the state committed
before it and its input (a re-run emits the same), so: a re-run after a driver or worker
kill applies nothing twice (``add`` stays exact), a task killed between its state commit
and this write writes on its re-run, and a zombie of an older batch can never move a
value back. The write happens after the task's fenced commit, so a fenced attempt writes
nothing. Keys of one task reach that task only (fields grouping), so per-task order is
per-key order.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stormshift.errors import TopologyError
from stormshift.state import keys as K
from stormshift.state.connection import Call

__all__ = ["SHAPES", "TARGET_KEY", "Target", "parse_targets", "target_call", "target_text"]

TARGET_KEY = "cutover.sink"
SHAPES = {"redis_zset": "zset", "redis_hash": "hash", "redis_keys": "keys", "kafka_topic": "kafka"}


@dataclass(frozen=True)
class Target:
    """Where one leaf stream's emits go: ``shape`` (zset | hash | keys | kafka) named
    ``name``, the member from tuple field(s) ``key``, the score/value from field ``value``
    (a Kafka message's value: the JSON object of ``value_fields`` when there are several)."""

    stream: str  # "component:stream"
    shape: str
    name: str
    key: tuple[str, ...]
    value: str
    op: str = "set"
    url: str | None = None
    value_fields: tuple[str, ...] = ()
    servers: str | None = None  # a Kafka topic's bootstrap servers

    @property
    def component(self) -> str:
        return self.stream.partition(":")[0]


def parse_targets(conf: Mapping[str, Any]) -> dict[str, Target]:
    """The ``cutover.sink`` entries of a topology config, by leaf stream (TopologyError:
    one line naming the entry and the fix)."""
    raw = conf.get(TARGET_KEY) or {}
    out: dict[str, Target] = {}
    for stream, spec in dict(raw).items():
        shapes = [s for s in SHAPES if s in (spec or {})]
        key = spec.get("key") if isinstance(spec, Mapping) else None
        value = spec.get("value") if isinstance(spec, Mapping) else None
        op = spec.get("op", "set") if isinstance(spec, Mapping) else "set"
        kafka = shapes == ["kafka_topic"]
        servers = spec.get("bootstrap_servers", conf.get("kafka.bootstrap_servers")) if kafka \
            else None
        if (":" not in stream or len(shapes) != 1 or not (key or kafka) or not value
                or op not in (("set",) if kafka else ("set", "add")) or (kafka and not servers)
                or (not kafka and not isinstance(value, str))):
            raise TopologyError(
                f"{TARGET_KEY} entry {stream!r} must name one of {sorted(SHAPES)}, a key field, "
                f"a value field and op set or add (a Kafka topic: its bootstrap_servers, value "
                f"one field or a list, op set), got {spec!r}",
                fix=f'e.g. "{TARGET_KEY}": {{"count_bolt:default": {{"redis_zset": "words", '
                    '"key": "word", "value": "count"}}')
        keys = () if not key else (key,) if isinstance(key, str) else tuple(map(str, key))
        several = () if isinstance(value, str) else tuple(map(str, value))
        out[stream] = Target(stream, SHAPES[shapes[0]], str(spec[shapes[0]]), keys,
                             "" if several else str(value), str(op), spec.get("url"), several,
                             str(servers) if servers else None)
    return out


def target_text(value: Any) -> str:
    """A value as the target stores it: decimal text for numbers, else ``str``."""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"target value {value!r} is not finite")
        return repr(int(value)) if value.is_integer() else repr(value)
    return str(value)


def target_call(target: Target, fields: Sequence[str], who: str, txid: int,
                leaves: Iterable[tuple[str, Sequence[Any]]]) -> Call | None:
    """The script call applying one task's emits of ``txid`` on ``target``'s stream
    (``fields``: that stream's declared fields); None when the task emitted none there.
    With ``set`` the last emit of a key wins; with ``add`` a key's emits are summed."""
    stream = target.stream.partition(":")[2]
    kpos = [fields.index(k) for k in target.key]
    vpos = fields.index(target.value)
    merged: dict[str, Any] = {}
    for name, values in leaves:
        if name != stream:
            continue
        member = ":".join(str(values[i]) for i in kpos)
        value = values[vpos]
        merged[member] = merged.get(member, 0) + value if target.op == "add" else value
    if not merged:
        return None
    args: list[Any] = [who, txid, target.shape, target.op]
    for member, value in merged.items():
        args += [member, target_text(value)]
    return ("target_put", [target.name, K.target_guard_key(target.name)], args)
