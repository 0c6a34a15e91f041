"""Graph rules: components and groupings stormshift cannot host, and project modules
it cannot import by their name (``shadowed_findings``).

Read from the declared specs (``project.declare``), not the loaded graph,
because the loader refuses exactly these: a JavaBolt, a Shell component, a
JavaSpout without a replacement, a custom Java grouping. Each finding points
at the line of the topology file that declares the component.
"""

from __future__ import annotations

from collections.abc import Callable

from streamparse.dsl.spout import JavaSpoutSpec

from stormshift.check.project import DeclaredComponent, DeclaredTopology
from stormshift.check.rules import RULES, Finding
from stormshift.errors import TopologyError
from stormshift.topology.sources import shadowed_modules
from stormshift.topology.specs import decode_grouping, java_class_name, shell_command, source_name

__all__ = ["graph_findings", "shadowed_findings"]

Add = Callable[[str, DeclaredComponent, str], None]  # (rule, component, message)


def graph_findings(declared: DeclaredTopology) -> list[Finding]:
    out: list[Finding] = []
    file = declared.relative(declared.layout.topology_file)

    def add(rule: str, comp: DeclaredComponent, message: str) -> None:
        out.append(Finding(rule, RULES[rule].severity, file, comp.line, comp.name, message))

    for comp in declared.components:
        if comp.cls is None:
            _non_python(comp, declared, add)
        for stream_id, grouping in (getattr(comp.spec, "inputs", None) or {}).items():
            source, stream = source_name(stream_id.componentId), str(stream_id.streamId)
            try:
                decode_grouping(grouping, consumer=comp.name, source=source, stream=stream)
            except TopologyError as err:
                detail = getattr(err, "detail", None) or str(err)
                add("custom-grouping", comp, detail.split(", which stormshift")[0])
    return out


def _non_python(comp: DeclaredComponent, declared: DeclaredTopology, report: Add) -> None:
    spec = comp.spec
    if getattr(spec.component_object, "shell", None) is not None:
        kind = type(spec).__name__.replace("Spec", "")
        report("shell-component", comp, f"{kind} runs `{shell_command(spec)}`")
    elif isinstance(spec, JavaSpoutSpec):
        replacement = declared.replacements.get(comp.name)
        if replacement is not None:
            report("java-spout-replaced", comp,
                   f"JavaSpout {java_class_name(spec)} replaced by {replacement.class_path}")
        else:
            report("java-spout", comp, f"JavaSpout {java_class_name(spec)}")
    else:
        report("java-bolt", comp, f"JavaBolt {java_class_name(spec)}")


def shadowed_findings(declared: DeclaredTopology) -> list[Finding]:
    """A module of ``src/`` that the standard library or an installed package shadows."""
    src = declared.layout.src_dir
    if src is None:
        return []
    out = []
    for name, where in shadowed_modules(src).items():
        path = src / f"{name}.py" if (src / f"{name}.py").is_file() else src / name / "__init__.py"
        out.append(Finding("shadowed-module", RULES["shadowed-module"].severity,
                           declared.relative(path), 1 if path.is_file() else 0, None,
                           f"`import {name}` gets {where}, not {declared.relative(path)}"))
    return out
