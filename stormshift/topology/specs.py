"""Copying one streamparse ``ComponentSpec`` into plain data.

streamparse keeps a component as thrift objects: ``par`` (an int, or a dict
keyed by environment), ``config`` (a JSON string), ``outputs``
(``StreamInfo``), ``inputs`` (``GlobalStreamId`` -> thrift ``Grouping`` union).
Everything here is a small pure function from those objects to the frozen
graph types; nothing here imports user code.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pystorm
from streamparse.dsl.bolt import JavaBoltSpec, ShellBoltSpec
from streamparse.dsl.component import ComponentSpec, JavaComponentSpec
from streamparse.dsl.spout import JavaSpoutSpec, ShellSpoutSpec

from stormshift.errors import TopologyError
from stormshift.topology.graph import ComponentKind, Grouping, GroupingKind, InputDef, StreamDef
from stormshift.topology.project import topology_error

# The thrift ``Grouping`` union's members, in its declaration order.
_NULL_KINDS = {
    "shuffle": GroupingKind.SHUFFLE,
    "all": GroupingKind.ALL,
    "none": GroupingKind.NONE,
    "direct": GroupingKind.DIRECT,
    "local_or_shuffle": GroupingKind.LOCAL_OR_SHUFFLE,
}
_UNION_MEMBERS = (
    "fields",
    "shuffle",
    "all",
    "none",
    "direct",
    "custom_object",
    "custom_serialized",
    "local_or_shuffle",
)

CUSTOM_GROUPING_FIX = (
    "replace it with Grouping.fields(...) on the key(s) the custom grouping partitions by "
    "(same key -> same task), or Grouping.SHUFFLE if it only balanced load; a partial-key "
    "grouping becomes a fields grouping plus a pre-aggregating bolt upstream"
)


def spec_kind(spec: ComponentSpec) -> ComponentKind:
    if isinstance(spec, (ShellSpoutSpec, JavaSpoutSpec)):
        return ComponentKind.SPOUT
    if isinstance(spec, (ShellBoltSpec, JavaBoltSpec)):
        return ComponentKind.BOLT
    raise topology_error(
        f"specification {spec!r} is neither a spout nor a bolt",
        component=getattr(spec, "name", None),
        fix="declare components with YourSpout.spec(...) / YourBolt.spec(...)",
    )


def python_class(spec: ComponentSpec) -> type | None:
    """The user's pystorm class for a Python component; None for Java/shell ones."""
    if isinstance(spec, JavaComponentSpec):
        return None
    cls = spec.component_cls
    if isinstance(cls, type) and issubclass(cls, (pystorm.Spout, pystorm.Bolt)):
        return cls
    return None


def java_class_name(spec: ComponentSpec) -> str:
    obj = getattr(spec, "component_object", None)
    java_object = getattr(obj, "java_object", None)
    if java_object is not None:
        return str(java_object.full_class_name)
    return "<serialized Java object>"


def java_args(spec: ComponentSpec) -> list[Any]:
    """A JavaSpout's constructor arguments (``args_list``) as plain values."""
    java_object = getattr(getattr(spec, "component_object", None), "java_object", None)
    values = []
    for arg in getattr(java_object, "args_list", None) or []:
        set_fields = [v for v in vars(arg).values() if v is not None]
        values.append(set_fields[0] if set_fields else None)
    return values


def shell_command(spec: ComponentSpec) -> str:
    shell = getattr(getattr(spec, "component_object", None), "shell", None)
    if shell is None:
        return "<unknown command>"
    return f"{shell.execution_command} {shell.script}".strip()


# -- par / config ---------------------------------------------------------------
def resolve_par(component: str, par: int | Mapping[str, int], environment: str | None) -> int:
    """An int par as is; a dict par picks ``environment`` (as ``sparse run -e ENV``)."""
    if not isinstance(par, Mapping):
        return int(par)
    envs = sorted(par)
    if environment is None:
        raise topology_error(
            f"par is set per environment {dict(par)} but no environment was chosen",
            component=component,
            fix=f"choose one of {envs} (-e/--environment), or keep a single env in config.json",
        )
    if environment not in par:
        raise topology_error(
            f"par has no entry for environment {environment!r}; it has {envs}",
            component=component,
            fix=f"add {environment!r} to the component's par dict or choose one of {envs}",
        )
    return int(par[environment])


def parse_config(component: str, raw: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """The component's own config (streamparse stores it as a JSON string)."""
    if raw is None:
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    try:
        parsed = json.loads(raw)
    except (TypeError, ValueError) as exc:
        raise topology_error(f"config is not valid JSON: {exc}", component=component) from None
    if not isinstance(parsed, dict):
        raise topology_error(f"config must be a JSON object, got {parsed!r}", component=component)
    return parsed


# -- outputs / inputs ---------------------------------------------------------------
def decode_outputs(spec: ComponentSpec) -> dict[str, StreamDef]:
    streams = getattr(spec, "outputs", None) or {}
    return {
        name: StreamDef(name=name, fields=tuple(info.output_fields or ()), direct=bool(info.direct))
        for name, info in streams.items()
    }


def source_name(component_id: Any) -> str:
    """``GlobalStreamId.componentId`` is a name, or a spec not yet renamed by the metaclass."""
    if isinstance(component_id, ComponentSpec):
        return str(component_id.name)
    return str(component_id)


def decode_grouping(grouping: Any, *, consumer: str, source: str, stream: str) -> Grouping:
    """A thrift ``Grouping`` union as a :class:`Grouping` (``fields=[]`` is GLOBAL)."""
    where = f"its input from {source!r} stream {stream!r}"
    present = [m for m in _UNION_MEMBERS if getattr(grouping, m, None) is not None]
    if len(present) != 1:
        raise topology_error(
            f"{where} has grouping {grouping!r}, which sets {present or 'no member'}; "
            "exactly one grouping kind is expected",
            component=consumer,
            fix="use one of Grouping.SHUFFLE, .fields(...), .GLOBAL, .ALL, .NONE, .DIRECT, .LOCAL_OR_SHUFFLE",
        )
    member = present[0]
    if member == "fields":
        fields = tuple(grouping.fields)
        return Grouping(GroupingKind.FIELDS, fields) if fields else Grouping(GroupingKind.GLOBAL)
    if member in _NULL_KINDS:
        return Grouping(_NULL_KINDS[member])
    raise custom_grouping_error(grouping, member, consumer=consumer, where=where)


def custom_grouping_error(
    grouping: Any, member: str, *, consumer: str, where: str
) -> TopologyError:
    if member == "custom_object":
        what = f"custom Java grouping {grouping.custom_object.full_class_name}"
    else:
        what = "a serialized custom Java grouping"
    return topology_error(
        f"{where} uses {what}, which stormshift cannot run: a CustomStreamGrouping's "
        "chooseTasks() is JVM code, while stormshift routes every tuple in Python",
        component=consumer,
        fix=CUSTOM_GROUPING_FIX,
    )


def decode_inputs(spec: ComponentSpec) -> tuple[InputDef, ...]:
    inputs = getattr(spec, "inputs", None) or {}
    decoded = []
    for stream_id, grouping in inputs.items():
        source = source_name(stream_id.componentId)
        stream = str(stream_id.streamId)
        decoded.append(
            InputDef(
                source,
                stream,
                decode_grouping(grouping, consumer=str(spec.name), source=source, stream=stream),
            )
        )
    return tuple(decoded)


def describe_outputs(outputs: Mapping[str, StreamDef]) -> str:
    return (
        ", ".join(
            f"{s.name}{' (direct)' if s.direct else ''}: {list(s.fields)}" for s in outputs.values()
        )
        or "no streams"
    )


def outputs_from_class(cls: type) -> dict[str, StreamDef] | None:
    """The outputs a Python class declares as its ``outputs`` attribute (None if unset)."""
    declared: Sequence[Any] | None = getattr(cls, "outputs", None)
    if declared is None:
        return None
    spec_outputs = ComponentSpec._sanitize_outputs(cls, declared)
    return {
        name: StreamDef(name, tuple(info.output_fields or ()), bool(info.direct))
        for name, info in spec_outputs.items()
    }
