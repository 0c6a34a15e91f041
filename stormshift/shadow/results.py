"""Which emits of a leaf stream form its *result*, and how to build it from the emits.

A *leaf stream* is a stream no component subscribes to: what the topology
outputs. Its *result mode* says what of its emits counts:

- ``latest``: the last emitted tuple per key (a running total emitted after
  every event: word counts, spend per advertiser);
- ``sum``: per key, the sum of each numeric value field over every emit, and
  the number of emits (the multiplicity);
- ``set``: the multiset of emitted tuples (order ignored, multiplicity kept);
  with ``key`` fields, the multiset per key;
- ``list``: the emitted tuples in order; with ``key`` fields, one ordered
  list per key (emit order across keys is not compared).

Any stream can be compared, not only leaves: a stream some bolt reads, named
in ``shadow.results``, is captured on both sides by a tap (``tap.py``) and
compared like a leaf (only leaves are inferred). Declared per stream in the
topology config (or ``-o``)::

    "shadow.results": {
        "count_bolt:default": {"mode": "latest", "key": ["word"]},
        "spend:default": {"mode": "sum", "key": ["advertiser_id"], "values": ["cost"],
                          "event_time": "ts"}
    }

``key`` are the key fields (default: the first field), ``values`` the compared
fields (default: every other field), ``event_time`` a field holding event time
in epoch ms (the report charts divergence over it; otherwise over output
position). A stream absent from the config is *inferred*: ``latest`` keyed on
its first field when the emitting component reads any input through a fields
grouping (its tasks own keys, so its last emit per key is the key's value),
``set`` otherwise. ``list`` is never inferred: Spark does not keep the emit
order across tasks that Storm's single stream of emits shows.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from stormshift.errors import OptionError
from stormshift.topology.graph import GroupingKind, TopologyGraph

__all__ = [
    "RESULTS_KEY",
    "Group",
    "ResultMode",
    "ResultSpec",
    "all_streams",
    "infer_spec",
    "leaf_streams",
    "materialize",
    "normalize",
    "result_specs",
    "stream_label",
]

RESULTS_KEY = "shadow.results"


class ResultMode(str, enum.Enum):
    LATEST = "latest"
    SUM = "sum"
    SET = "set"
    LIST = "list"


@dataclass(frozen=True)
class ResultSpec:
    """How one leaf stream's emits become its result."""

    component: str
    stream: str
    fields: tuple[str, ...]
    mode: ResultMode
    key: tuple[str, ...]
    values: tuple[str, ...]
    event_time: str | None = None
    inferred: bool = False
    reason: str = ""
    #: False: a stream some bolt reads, declared in ``shadow.results``; the shadow reads
    #: it through a tap (``tap.py``)
    leaf: bool = True

    @property
    def label(self) -> str:
        return stream_label(self.component, self.stream)

    def describe(self) -> str:
        key = ", ".join(self.key) or "(whole tuple)"
        how = f"inferred: {self.reason}" if self.inferred else "declared in shadow.results"
        return f"{self.mode.value} per {key} ({how})"


@dataclass
class Group:
    """The result of one key: its compared value, multiplicity, and where it was emitted.

    ``value`` is the list of value fields (``latest``/``sum``), or the list of
    tuples (``list``); ``count`` the number of emits that made it (for ``set``,
    the multiplicity of the tuple); ``positions`` the 0-based positions of
    those emits in the stream, ``times`` their event times (or None),
    ``history`` each emit's value fields (where the two sides first disagree).
    """

    value: Any
    count: int
    positions: list[int] = field(default_factory=list)
    times: list[int | None] = field(default_factory=list)
    history: list[Any] = field(default_factory=list)


def stream_label(component: str, stream: str) -> str:
    return f"{component}:{stream}"


def leaf_streams(graph: TopologyGraph) -> list[tuple[str, str]]:
    """``(component, stream)`` of every stream nobody subscribes to, sorted (a shadow's
    taps, ``tap.py``, are not the topology's: the streams they read stay leaves)."""
    from stormshift.shadow.tap import is_tap

    consumed = {(i.source, i.stream) for c in graph if not is_tap(c.name) for i in c.inputs}
    return sorted(
        (c.name, s) for c in graph if not is_tap(c.name) for s in c.outputs
        if (c.name, s) not in consumed
    )


def all_streams(graph: TopologyGraph) -> list[tuple[str, str]]:
    """``(component, stream)`` of every declared stream of the topology, sorted."""
    from stormshift.shadow.tap import is_tap

    return sorted((c.name, s) for c in graph if not is_tap(c.name) for s in c.outputs)


def infer_spec(graph: TopologyGraph, component: str, stream: str) -> ResultSpec:
    """The rule of the module docstring, with the reason spelled out."""
    comp = graph.component(component)
    fields = graph.stream_fields(component, stream)
    keyed = [i for i in comp.inputs if i.grouping.kind is GroupingKind.FIELDS]
    if keyed and fields:
        grouping = keyed[0]
        return ResultSpec(
            component, stream, fields, ResultMode.LATEST, fields[:1], fields[1:],
            inferred=True,
            reason=f"{component} reads {grouping.source} by {grouping.grouping}",
        )
    return ResultSpec(
        component, stream, fields, ResultMode.SET, (), fields, inferred=True,
        reason=f"{component} has no fields-grouped input",
    )


def result_specs(graph: TopologyGraph, config: Mapping[str, Any] | None = None) -> list[ResultSpec]:
    """One spec per leaf stream (declared in ``shadow.results`` of ``config``, else the
    topology config; else inferred) and per non-leaf stream declared there (``leaf``
    False), sorted by component and stream."""
    declared = (config if config is not None else graph.config).get(RESULTS_KEY) or {}
    if not isinstance(declared, Mapping):
        raise OptionError(
            f"{RESULTS_KEY} must map 'component:stream' to a spec, got {declared!r}; "
            'fix: e.g. {"count_bolt:default": {"mode": "latest", "key": ["word"]}}'
        )
    leaves = leaf_streams(graph)
    streams = all_streams(graph)
    labels = {stream_label(c, s): (c, s) for c, s in streams}
    inner = []  # declared streams some bolt reads: compared through a tap
    for label in sorted(declared):
        where = _split_label(label)
        if where not in streams:
            raise OptionError(
                f"{RESULTS_KEY} names {label!r}, which is no stream of the topology; "
                f"fix: use one of {sorted(labels)} (component:stream)"
            )
        if where not in leaves:
            inner.append((where, label))
    specs = [dataclasses.replace(_declared(graph, c, s, declared[label]), leaf=False)
             for (c, s), label in inner]
    for component, stream in leaves:
        entry = declared.get(stream_label(component, stream))
        if entry is None and stream == "default":
            entry = declared.get(component)
        if entry is None:
            specs.append(infer_spec(graph, component, stream))
        else:
            specs.append(_declared(graph, component, stream, entry))
    return sorted(specs, key=lambda spec: (spec.component, spec.stream))


def _split_label(label: str) -> tuple[str, str]:
    component, _, stream = label.partition(":")
    return component, stream or "default"


def _declared(graph: TopologyGraph, component: str, stream: str, entry: Any) -> ResultSpec:
    fields = graph.stream_fields(component, stream)
    label = stream_label(component, stream)
    if not isinstance(entry, Mapping):
        raise OptionError(f"{RESULTS_KEY}[{label!r}] must be an object, got {entry!r}")
    unknown = sorted(set(entry) - {"mode", "key", "values", "event_time"})
    if unknown:
        raise OptionError(
            f"{RESULTS_KEY}[{label!r}] has unknown keys {unknown}; "
            "fix: only mode, key, values and event_time are read"
        )
    try:
        mode = ResultMode(entry.get("mode", "latest"))
    except ValueError:
        raise OptionError(
            f"{RESULTS_KEY}[{label!r}]: mode {entry.get('mode')!r} is not one of "
            f"{[m.value for m in ResultMode]}"
        ) from None
    default_key: Sequence[str] = fields[:1] if mode in (ResultMode.LATEST, ResultMode.SUM) else ()
    key = _field_list(entry.get("key", default_key), fields, label, "key")
    values = _field_list(
        entry.get("values", [f for f in fields if f not in key]), fields, label, "values"
    )
    event_time = entry.get("event_time")
    if event_time is not None:
        _field_list([event_time], fields, label, "event_time")
    return ResultSpec(component, stream, fields, mode, key, values, event_time)


def _field_list(names: Any, fields: tuple[str, ...], label: str, what: str) -> tuple[str, ...]:
    if isinstance(names, str):
        names = [names]
    names = tuple(str(n) for n in names)
    missing = [n for n in names if n not in fields]
    if missing:
        raise OptionError(
            f"{RESULTS_KEY}[{label!r}].{what}: {missing} not among the stream's fields {list(fields)}"
        )
    return names


def normalize(value: Any) -> Any:
    """A value as JSON carries it (tuples become lists), so both engines' emits compare alike."""
    return json.loads(json.dumps(value, default=str))


def hashable(value: Any) -> Any:
    """A dict key for a normalized value (lists and objects as canonical JSON text)."""
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True)
    return value


def materialize(spec: ResultSpec, rows: Iterable[Sequence[Any]]) -> dict[Any, Group]:
    """The result of ``spec``'s stream from its emits (in emit order), by key.

    Keys are tuples of the key fields' values (``list`` without key: the
    position; ``set`` without key: the whole tuple).
    """
    index = {f: i for i, f in enumerate(spec.fields)}
    key_at = [index[f] for f in spec.key]
    value_at = [index[f] for f in spec.values]
    time_at = index[spec.event_time] if spec.event_time else None
    groups: dict[Any, Group] = {}
    for position, raw in enumerate(rows):
        row = normalize(list(raw))
        values = [row[i] if i < len(row) else None for i in value_at]
        when = _event_time(row, time_at)
        if spec.mode is ResultMode.LIST and not key_at:
            key: Any = (position,)
        elif spec.mode is ResultMode.SET:
            key = tuple(hashable(row[i]) for i in key_at) + (hashable(values),)
        else:
            key = tuple(hashable(row[i] if i < len(row) else None) for i in key_at)
        group = groups.get(key)
        if group is None:
            group = groups[key] = Group(_start(spec.mode, values), 0)
        elif spec.mode is ResultMode.LATEST:
            group.value = values
        elif spec.mode is ResultMode.SUM:
            group.value = [_add(a, b) for a, b in zip(group.value, values, strict=True)]
        elif spec.mode is ResultMode.LIST:
            group.value.append(values)
        group.count += 1
        group.positions.append(position)
        group.times.append(when)
        group.history.append(values)
    return groups


def _start(mode: ResultMode, values: list[Any]) -> Any:
    if mode is ResultMode.LIST:
        return [values]
    return list(values)


def _add(a: Any, b: Any) -> Any:
    if _is_number(a) and _is_number(b):
        return a + b
    return b  # a non-numeric value field of a sum: its latest value


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _event_time(row: list[Any], at: int | None) -> int | None:
    if at is None or at >= len(row):
        return None
    value = row[at]
    return int(value) if _is_number(value) else None
