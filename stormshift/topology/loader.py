"""Loading a streamparse topology into a frozen, validated :class:`TopologyGraph`.

``load_topology`` accepts what a user has at hand:

- a ``Topology`` subclass (already imported by the caller),
- a path to ``topologies/NAME.py`` (the single Topology subclass in it, or
  the one named by ``name``),
- a streamparse project dir (``name`` picks ``topologies/NAME.py`` as
  ``sparse run -n NAME``; ``NAME:Class`` also picks the class).

Config precedence follows ``sparse``: config.json env ``options`` < the
Topology's ``config`` < ``overrides``; a component's own config overlays the
result. ``environment`` selects per-environment ``par`` (default: the only env
of config.json).
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from streamparse.dsl.component import ComponentSpec
from streamparse.dsl.spout import JavaSpoutSpec
from streamparse.dsl.topology import Topology, TopologyType

from stormshift.errors import TopologyError
from stormshift.topology.capabilities import capabilities_of
from stormshift.topology.classes import check_importable, class_path_of, import_component_class
from stormshift.topology.graph import ComponentDef, ComponentKind, TopologyGraph, freeze
from stormshift.topology.overrides import refuse_bad_values, unknown_key_warnings
from stormshift.topology.project import (
    Layout,
    describe_location,
    find_project_dir,
    import_failure,
    import_topology_module,
    layout_for_file,
    layout_for_project,
    read_project_config,
    topology_error,
    traceback_frames,
    user_location,
    with_location,
)
from stormshift.topology.replacements import (
    REPLACEMENTS_KEY,
    Replacement,
    check_replacement_class,
    check_unused,
    collect_replacements,
    non_python_error,
)
from stormshift.topology.specs import (
    decode_inputs,
    decode_outputs,
    java_args,
    java_class_name,
    parse_config,
    python_class,
    resolve_par,
    spec_kind,
)
from stormshift.topology.validate import topological_order, validate_components

__all__ = ["graph_from_topology_class", "import_component_class", "import_topology", "load_topology",
           "with_class"]

Target = type | str | os.PathLike[str]


@dataclass
class _Context:
    """What decoding every component needs: environment, merged config, replacements."""

    environment: str | None
    topology_config: dict[str, Any]
    replacements: dict[str, Replacement]
    source_dirs: list[str]
    extra_roots: list[str] = field(default_factory=list)
    overrides: dict[str, Any] = field(default_factory=dict)
    declared: frozenset[str] = frozenset()  # config keys set before the overrides


# -- public entry points ----------------------------------------------------------
def load_topology(
    target: Target,
    name: str | None = None,
    environment: str | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> TopologyGraph:
    """Load and validate a topology (see the module docstring for ``target``).

    One load at a time per process: loading rearranges ``sys.path`` and evicts another
    project's modules from ``sys.modules`` (``sources.use_sources``), so two threads loading
    at once (a harness starting runs in parallel, a shadow run's two sides) could import
    from each other's half-placed paths."""
    with _LOADING:
        return _load(target, name, environment, overrides)


_LOADING = threading.RLock()


def _load(target: Target, name: str | None, environment: str | None,
          overrides: Mapping[str, Any] | None) -> TopologyGraph:
    if isinstance(target, type):
        if not issubclass(target, Topology) or target is Topology:
            raise topology_error(f"{target!r} is not a streamparse Topology subclass")
        return graph_from_topology_class(target, _layout_for_class(target), environment, overrides)
    if not isinstance(target, (str, os.PathLike)):
        raise topology_error(
            f"cannot load a topology from {target!r}",
            fix="pass a Topology subclass, a topologies/NAME.py path or a streamparse project dir",
        )
    path = Path(target)
    class_name = name
    if path.is_dir():
        file_name, _, class_name = (name or "").partition(":")
        layout = layout_for_project(path, file_name or None)
    elif path.suffix == ".py":
        layout = layout_for_file(path)
    else:
        raise topology_error(
            f"{path} is neither a topology .py file nor a project directory",
            fix="pass topologies/NAME.py or the streamparse project dir (with config.json)",
        )
    module = import_topology(layout, environment, overrides)
    topology_cls = select_topology_class(module, layout, class_name or None)
    try:
        return graph_from_topology_class(
            topology_cls, layout, environment, overrides, graph_name=layout.topology_name
        )
    except TopologyError as err:
        if err.component is None:
            raise
        raise with_location(err, class_location(topology_cls, layout)) from None


def graph_from_topology_class(
    topology_cls: type,
    layout: Layout | None,
    environment: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    *,
    graph_name: str | None = None,
) -> TopologyGraph:
    """Copy a Topology class's specs into a validated graph."""
    specs = list(getattr(topology_cls, "specs", None) or [])
    if not specs:
        raise topology_error(
            f"Topology {topology_cls.__name__} has no component specs",
            fix="declare components as class attributes, e.g. spout = MySpout.spec()",
        )
    ctx = _context(layout, environment, getattr(topology_cls, "config", None) or {}, overrides)
    components = assemble_components(specs, ctx)
    source_dirs = list(dict.fromkeys(ctx.source_dirs + ctx.extra_roots))
    own = {k for c in components for k in c.config if k not in ctx.topology_config}
    notices = unknown_key_warnings(ctx.overrides, ctx.declared | own, source_dirs)
    working_dir = layout.working_dir if layout else (Path(source_dirs[0]) if source_dirs else None)
    return TopologyGraph(
        name=graph_name or topology_cls.__name__,
        components=freeze({c.name: c for c in components}),
        config=freeze(ctx.topology_config),
        project_dir=str(layout.project_dir) if layout and layout.project_dir else None,
        source_dirs=tuple(source_dirs),
        working_dir=str(working_dir) if working_dir else None,
        environment=ctx.environment,
        warnings=tuple(notices),
    )


def assemble_components(specs: Sequence[ComponentSpec], ctx: _Context) -> list[ComponentDef]:
    """Decode, validate, order topologically and number the tasks."""
    check_unused(ctx.replacements, [str(s.name) for s in specs if isinstance(s, JavaSpoutSpec)])
    components = [component_from_spec(spec, ctx) for spec in specs]
    validate_components(components)
    return assign_task_ids(topological_order(components))


# -- one component ------------------------------------------------------------
def component_from_spec(spec: ComponentSpec, ctx: _Context) -> ComponentDef:
    name = str(spec.name)
    kind = spec_kind(spec)
    outputs = decode_outputs(spec)
    inputs = decode_inputs(spec)
    par = resolve_par(name, spec.par, ctx.environment)
    own_config = parse_config(name, spec.config)
    replaces = None
    translated: dict[str, str] = {}
    cls: type | None = python_class(spec)
    if cls is not None:
        class_path = _python_class_path(cls, name, ctx)
    else:
        replacement = ctx.replacements.get(name)
        if replacement is None or not isinstance(spec, JavaSpoutSpec):
            raise non_python_error(spec, kind, outputs)
        replacing = check_importable(replacement.class_path, ctx.source_dirs, name)
        check_replacement_class(name, replacing, replacement, outputs)
        class_path, replaces = replacement.class_path, java_class_name(spec)
        from_java = getattr(replacing, "from_java", None)
        if callable(from_java):  # the replacement reads the Java declaration (KafkaSpout)
            java_config, translated = from_java(replaces, java_args(spec), own_config)
            translated = {k: v for k, v in translated.items() if k not in replacement.config}
            own_config = {**own_config, **java_config}
        own_config = {**own_config, **replacement.config}
        cls = replacing
    config = component_config(ctx.topology_config, own_config)
    return ComponentDef(
        name=name,
        kind=kind,
        class_path=class_path,
        par=par,
        config=freeze(config),
        outputs=freeze(outputs),
        inputs=inputs,
        replaces=replaces,
        translated=freeze(translated),
        capabilities=capabilities_of(cls, config, spout=kind is ComponentKind.SPOUT,
                                     class_path=class_path),
    )


def with_class(comp: ComponentDef, class_path: str, source_dirs: Sequence[str],
               config: Mapping[str, Any]) -> ComponentDef:
    """``comp`` run by another class (a shadow's replay spout) with ``config``: its
    capabilities read again from that class, as loading would."""
    cls = check_importable(class_path, source_dirs, comp.name)
    return dataclasses.replace(comp, class_path=class_path, config=freeze(dict(config)),
                               capabilities=capabilities_of(cls, config, spout=comp.is_spout,
                                                            class_path=class_path))


def component_config(topology_config: Mapping[str, Any], own: Mapping[str, Any]) -> dict[str, Any]:
    """Storm's merge: the component's own config over the topology's (minus our own key)."""
    merged = {**topology_config, **own}
    merged.pop(REPLACEMENTS_KEY, None)
    return merged


def _python_class_path(cls: type, component: str, ctx: _Context) -> str:
    class_path, root = class_path_of(cls, component)
    if root is not None and str(root) not in ctx.extra_roots:
        ctx.extra_roots.append(str(root))
    return class_path


def assign_task_ids(ordered: Sequence[ComponentDef]) -> list[ComponentDef]:
    """Storm numbers tasks from 1 in component-name order."""
    first: dict[str, int] = {}
    next_id = 1
    for component in sorted(ordered, key=lambda c: c.name):
        first[component.name] = next_id
        next_id += component.par
    return [dataclasses.replace(c, first_task_id=first[c.name]) for c in ordered]


# -- environment and config ---------------------------------------------------------
def _context(
    layout: Layout | None,
    environment: str | None,
    topology_config: Mapping[str, Any],
    overrides: Mapping[str, Any] | None,
) -> _Context:
    project_config = layout.project_config if layout else {}
    env = resolve_environment(environment, project_config)
    env_options = (
        dict((project_config.get("envs") or {}).get(env, {}).get("options") or {}) if env else {}
    )
    declared = {**env_options, **dict(topology_config)}
    refuse_bad_values(overrides or {}, declared)  # exit 2 before any engine starts
    merged = {**declared, **dict(overrides or {})}
    replacements = collect_replacements(
        project_config, env_options, topology_config, overrides or {}
    )
    source_dirs = [str(d) for d in layout.source_dirs] if layout else []
    return _Context(env, merged, replacements, source_dirs, overrides=dict(overrides or {}),
                    declared=frozenset(declared))


def resolve_environment(environment: str | None, project_config: Mapping[str, Any]) -> str | None:
    """The chosen env, else config.json's only env (as sparse), else None."""
    envs = project_config.get("envs") or {}
    if environment is None:
        return next(iter(envs)) if len(envs) == 1 else None
    if envs and environment not in envs:
        raise topology_error(
            f"environment {environment!r} is not in config.json; environments are {sorted(envs)}",
            fix=f'choose one of {sorted(envs)} or add it to config.json\'s "envs"',
        )
    return environment


# -- finding the Topology class ----------------------------------------------------
def _layout_for_class(topology_cls: type) -> Layout | None:
    module = sys.modules.get(topology_cls.__module__)
    file = getattr(module, "__file__", None)
    if not file:
        return None
    path = Path(file).resolve()
    project_dir = find_project_dir(path)
    config = read_project_config(project_dir) if project_dir else {}
    return Layout(path, path.stem, project_dir, config)


def select_topology_class(module: ModuleType, layout: Layout, class_name: str | None) -> type:
    found = [v for v in vars(module).values() if isinstance(v, TopologyType) and v is not Topology]
    own = [c for c in found if c.__module__ == module.__name__] or found
    classes = list(dict.fromkeys(own))
    names = [c.__name__ for c in classes]
    if class_name is not None:
        if class_name in names:
            return classes[names.index(class_name)]
        raise topology_error(
            f"{layout.topology_file} has no Topology subclass {class_name!r}; it defines {names}",
            fix=f"use one of {names}",
        )
    if not classes:
        raise topology_error(
            f"{layout.topology_file} defines no streamparse Topology subclass",
            fix="define `class MyTopology(Topology): ...` in the file",
        )
    if len(classes) > 1:
        raise topology_error(
            f"{layout.topology_file} defines several Topology subclasses: {names}",
            fix=f"choose one by name, e.g. name={names[0]!r}",
        )
    return classes[0]


def class_location(topology_cls: type, layout: Layout) -> str:
    """``topologies/NAME.py:LINE `class X(Topology):``` for messages."""
    try:
        lines, start = inspect.getsourcelines(topology_cls)
    except (OSError, TypeError):
        return str(layout.topology_file)
    location = (str(layout.topology_file), start, lines[0].strip() if lines else "")
    return describe_location(location, list(layout.source_dirs))


def import_topology(
    layout: Layout, environment: str | None, overrides: Mapping[str, Any] | None
) -> ModuleType:
    """Import the topology file; whatever the user's code raises becomes a TopologyError
    (a MissingPackageError for a package this environment lacks)."""
    try:
        return import_topology_module(layout)
    except TopologyError:
        raise
    except Exception as exc:  # noqa: BLE001 - user code may raise anything
        explained = _explain_metaclass_failure(exc, layout, environment, overrides)
        if explained is not None:
            raise explained from None
        raise import_failure(
            exc, f"topology file {layout.topology_file}", list(layout.source_dirs)
        ) from None


def _explain_metaclass_failure(
    exc: BaseException, layout: Layout, environment: str | None, overrides: Mapping[str, Any] | None
) -> TopologyError | None:
    """streamparse's metaclass raises bare KeyError/ValueError for a bad topology;
    re-run our checks on the specs it was building to say what is wrong and how to fix it."""
    metaclass_code = TopologyType.__new__.__code__
    frame = next(
        (f for f in traceback_frames(exc.__traceback__) if f.f_code is metaclass_code), None
    )
    if frame is None or not isinstance(frame.f_locals.get("specs"), dict):
        return None
    specs = list(frame.f_locals["specs"].values())
    class_dict = frame.f_locals.get("class_dict") or {}
    raw_config = class_dict.get("config")
    config: dict[str, Any] = raw_config if isinstance(raw_config, dict) else {}
    where = describe_location(
        user_location(exc, list(layout.source_dirs)), list(layout.source_dirs)
    )
    try:
        assemble_components(specs, _context(layout, environment, config, overrides))
    except TopologyError as err:
        return with_location(err, where)
    except Exception:  # noqa: BLE001 - fall back to the generic import error
        return None
    return None
