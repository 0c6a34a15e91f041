"""Java and shell components: refuse them, or swap a JavaSpout for a Python spout.

Storm runs JavaSpout/JavaBolt in the JVM and ShellBolt/ShellSpout as external
multilang processes; stormshift hosts Python classes in-process, so neither can
run. A JavaSpout is usually just a source (streamparse's Kafka example), so it
can be replaced by a Python spout through the config key
``"stormshift.replacements"`` (in config.json's top level, the topology's
``config`` or the run's overrides; later sources win per component)::

    "stormshift.replacements": {
        "pixel-spout": {"class": "spouts.pixels.PixelSpout", "config": {"topic": "pixels"}}
    }

The replacement keeps the Java spout's declared outputs and par, so the
consumers written against it are unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pystorm
from streamparse.dsl.component import ComponentSpec

from stormshift.errors import TopologyError
from stormshift.topology.graph import ComponentKind, StreamDef
from stormshift.topology.project import topology_error
from stormshift.topology.specs import (
    describe_outputs,
    java_class_name,
    outputs_from_class,
    shell_command,
)

REPLACEMENTS_KEY = "stormshift.replacements"


@dataclass(frozen=True)
class Replacement:
    """A Python spout standing in for a Java spout."""

    class_path: str
    config: Mapping[str, Any] = field(default_factory=dict)


def _parse_entry(component: str, entry: Any) -> Replacement:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("class"), str):
        raise topology_error(
            f'{REPLACEMENTS_KEY} entry {entry!r} must be an object with a "class" string',
            component=component,
            fix=f'use {{"{component}": {{"class": "spouts.module.PythonSpout", "config": {{}}}}}}',
        )
    unknown = sorted(set(entry) - {"class", "config"})
    if unknown:
        raise topology_error(
            f"{REPLACEMENTS_KEY} entry has unknown keys {unknown}",
            component=component,
            fix='only "class" and "config" are read',
        )
    config = entry.get("config") or {}
    if not isinstance(config, Mapping):
        raise topology_error(
            f'{REPLACEMENTS_KEY} "config" must be an object, got {config!r}', component=component
        )
    return Replacement(entry["class"], dict(config))


def collect_replacements(*configs: Mapping[str, Any]) -> dict[str, Replacement]:
    """Replacements from several config sources, later sources winning per component."""
    merged: dict[str, Replacement] = {}
    for config in configs:
        section = config.get(REPLACEMENTS_KEY) or {}
        if not isinstance(section, Mapping):
            raise topology_error(
                f"{REPLACEMENTS_KEY} must map component names to replacements, got {section!r}",
                fix=f'"{REPLACEMENTS_KEY}": {{"component-name": {{"class": "module.Spout"}}}}',
            )
        for component, entry in section.items():
            merged[str(component)] = _parse_entry(str(component), entry)
    return merged


def suggested_config(component: str, outputs: Mapping[str, StreamDef]) -> str:
    entry = {REPLACEMENTS_KEY: {component: {"class": "spouts.your_module.YourSpout", "config": {}}}}
    return (
        f"add {json.dumps(entry)} to config.json (top level) or to the topology's config, "
        f"where YourSpout is a streamparse Spout emitting {describe_outputs(outputs)}"
    )


def non_python_error(
    spec: ComponentSpec, kind: ComponentKind, outputs: Mapping[str, StreamDef]
) -> TopologyError:
    """Why a Java/shell component cannot run, and what to do instead."""
    name = str(spec.name)
    if getattr(spec.component_object, "shell", None) is not None:
        return topology_error(
            f"{type(spec).__name__.replace('Spec', '')} runs the external command "
            f"`{shell_command(spec)}` over Storm's multilang pipe; stormshift hosts only Python "
            "classes in-process",
            component=name,
            fix=f"port it to a streamparse {'Spout' if kind is ComponentKind.SPOUT else 'Bolt'} "
            f"subclass and declare it with YourClass.spec(...) (outputs: {describe_outputs(outputs)})",
        )
    if kind is ComponentKind.SPOUT:
        return topology_error(
            f"JavaSpout {java_class_name(spec)} runs in the JVM and cannot run in Python; "
            "replace it with a Python spout of the same outputs",
            component=name,
            fix=suggested_config(name, outputs),
        )
    return topology_error(
        f"JavaBolt {java_class_name(spec)} runs in the JVM and cannot run in Python",
        component=name,
        fix="rewrite it as a streamparse Bolt with the same outputs "
        f"({describe_outputs(outputs)}) and declare it with YourBolt.spec(...); only Java "
        f"spouts can be swapped through {REPLACEMENTS_KEY!r}",
    )


def check_replacement_class(
    name: str, cls: type, replacement: Replacement, outputs: Mapping[str, StreamDef]
) -> None:
    """The replacement must be a Python spout emitting what the Java spout declared."""
    if not issubclass(cls, pystorm.Spout):
        raise topology_error(
            f"replacement {replacement.class_path} is not a Spout subclass",
            component=name,
            fix="point the replacement at a streamparse Spout subclass",
        )
    own = outputs_from_class(cls)
    if own is not None and own != dict(outputs):
        raise topology_error(
            f"replacement {replacement.class_path} declares outputs {describe_outputs(own)} but "
            f"the Java spout declared {describe_outputs(outputs)}",
            component=name,
            fix="make the replacement's outputs match the Java spout's (its consumers read those fields)",
        )


def check_unused(replacements: Mapping[str, Replacement], java_spouts: list[str]) -> None:
    """A replacement naming no Java spout is a typo; say so instead of ignoring it."""
    for name in sorted(set(replacements) - set(java_spouts)):
        raise topology_error(
            f"{REPLACEMENTS_KEY} names {name!r}, which is not a Java spout of this topology; "
            f"Java spouts are {sorted(java_spouts)}",
            component=name,
            fix="use the Java spout's component name (the Topology attribute name or its name=)",
        )
