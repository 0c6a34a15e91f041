"""The topology as declared, before stormshift's loader refuses anything.

``load_topology`` rejects Java/shell components and custom groupings, but
``check`` must report them (with the line that declares them) next to the
rest. So this module imports the topology file the way the loader does and
keeps streamparse's specs: each component's attribute name, declaring line,
Python class (None for Java/shell) and the config stormshift would merge.
Packages the project imports that are not installed are stood in for
(``stand_ins``) and kept as ``missing``.
"""

from __future__ import annotations

import ast
import inspect
import os
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from streamparse.dsl.component import ComponentSpec

from stormshift.check.stand_ins import StandIns, import_standing_in
from stormshift.errors import MissingPackageError, TopologyError
from stormshift.topology.capabilities import Capabilities, capabilities_of
from stormshift.topology.graph import ComponentKind
from stormshift.topology.loader import import_topology, resolve_environment, select_topology_class
from stormshift.topology.project import (
    Layout,
    layout_for_file,
    layout_for_project,
)
from stormshift.topology.replacements import Replacement, collect_replacements
from stormshift.topology.specs import parse_config, python_class, spec_kind

__all__ = ["DeclaredComponent", "DeclaredTopology", "declare", "is_user_file"]


@dataclass(frozen=True)
class DeclaredComponent:
    name: str
    attr: str
    line: int  # of ``attr = X.spec(...)`` in the topology file
    spec: ComponentSpec
    cls: type | None  # None for Java / shell components
    config: Mapping[str, Any]  # topology config overlaid with the component's own
    capabilities: Capabilities | None = None  # read from ``cls`` as the loader reads them


@dataclass
class DeclaredTopology:
    layout: Layout
    topology_cls: type | None  # None: unreadable even with stand-ins (see ``missing``)
    environment: str | None
    config: dict[str, Any]
    replacements: dict[str, Replacement]
    components: list[DeclaredComponent] = field(default_factory=list)
    missing: list[MissingPackageError] = field(default_factory=list)

    @property
    def root(self) -> Path:
        """What finding paths are relative to."""
        return self.layout.project_dir or self.layout.topology_file.parent

    @property
    def source_dirs(self) -> tuple[Path, ...]:
        return self.layout.source_dirs

    def relative(self, path: str | os.PathLike[str]) -> str:
        try:
            return str(Path(path).resolve().relative_to(self.root.resolve()))
        except ValueError:
            return str(path)


def declare(
    path: str | os.PathLike[str],
    name: str | None = None,
    environment: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    *,
    stand_ins: StandIns | None = None,
) -> DeclaredTopology:
    """Import ``path`` (project dir or topology file) and keep its specs; with ``stand_ins``,
    a package that is not installed is stood in for instead of raising."""
    target = Path(path)
    class_name = name
    if target.is_dir():
        file_name, _, class_name = (name or "").partition(":")
        layout = layout_for_project(target, file_name or None)
    elif target.suffix == ".py":
        layout = layout_for_file(target)
    else:
        raise TopologyError(f"{target} is neither a topology .py file nor a project directory",
                            fix="pass topologies/NAME.py or the streamparse project dir")
    missing: list[MissingPackageError] = []
    if stand_ins is None:
        module: ModuleType | None = import_topology(layout, environment, overrides)
    else:
        stand_ins.roots = layout.source_dirs
        module, missing = import_standing_in(
            lambda: import_topology(layout, environment, overrides), stand_ins)
    env = resolve_environment(environment, layout.project_config)
    if module is None:
        return DeclaredTopology(layout, None, env, {}, {}, missing=missing)
    topology_cls = select_topology_class(module, layout, class_name or None)
    env_options = (
        dict((layout.project_config.get("envs") or {}).get(env, {}).get("options") or {})
        if env else {}
    )
    topo_config = dict(getattr(topology_cls, "config", None) or {})
    config = {**env_options, **topo_config, **dict(overrides or {})}
    replacements = collect_replacements(layout.project_config, env_options, topo_config,
                                        overrides or {})
    declared = DeclaredTopology(layout, topology_cls, env, config, replacements, missing=missing)
    lines = _attribute_lines(topology_cls)
    attrs = {id(v): k for k, v in vars(topology_cls).items() if isinstance(v, ComponentSpec)}
    for spec in getattr(topology_cls, "specs", None) or []:
        attr = attrs.get(id(spec), str(spec.name))
        try:
            own = parse_config(str(spec.name), spec.config)
        except TopologyError:
            own = {}
        cls, merged = python_class(spec), {**config, **own}
        declared.components.append(DeclaredComponent(
            name=str(spec.name), attr=attr, line=lines.get(attr, 0), spec=spec,
            cls=cls, config=merged, capabilities=None if cls is None else
            capabilities_of(cls, merged, spout=spec_kind(spec) is ComponentKind.SPOUT),
        ))
    return declared


def _attribute_lines(topology_cls: type) -> dict[str, int]:
    """Attribute name -> line of its assignment in the Topology class body."""
    try:
        source_lines, start = inspect.getsourcelines(topology_cls)
    except (OSError, TypeError):
        return {}
    tree = ast.parse(textwrap.dedent("".join(source_lines)))
    out: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out.setdefault(target.id, node.lineno + start - 1)
    return out


def is_user_file(path: str | None, declared: DeclaredTopology) -> bool:
    """A file of the project (not a library): under one of its source dirs."""
    if not path:
        return False
    resolved = Path(path).resolve()
    if "site-packages" in resolved.parts:
        return False
    return any(resolved.is_relative_to(d.resolve()) for d in declared.source_dirs)
