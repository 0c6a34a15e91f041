"""Where a topology's code lives, and importing it the way ``sparse run`` does.

A streamparse project is a directory with ``config.json``, ``topologies/``
(one ``NAME.py`` per topology) and ``src/`` (the components). ``sparse`` puts
``src/`` and ``topologies/`` on ``sys.path`` and imports ``topologies/NAME.py``
as module ``NAME``; real projects import components either as
``from bolts import X`` (``src/`` on the path) or ``from src.bolts import X``
(project dir on the path), so all three directories are *source dirs*.

Source dirs get priority on ``sys.path`` only while user code is imported;
afterwards they stay appended (as sparse does), so a project's ``src/queue.py``
cannot shadow the standard library for the rest of the process.

Several projects can be loaded in one process (tests, shadow runs), and two
projects usually both have a ``bolts`` package: before importing, modules of
those names that were loaded from somewhere else are evicted from
``sys.modules`` so the right project's code is imported.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
import traceback
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any

from stormshift.errors import TopologyError

DEFAULT_TOPOLOGY_SPECS = "topologies/"


@dataclass(frozen=True)
class Layout:
    """The directories and config of one topology file (inside a project or not)."""

    topology_file: Path
    topology_name: str
    project_dir: Path | None = None
    project_config: dict[str, Any] = field(default_factory=dict)

    @property
    def src_dir(self) -> Path | None:
        if self.project_dir is not None and (self.project_dir / "src").is_dir():
            return self.project_dir / "src"
        return None

    @property
    def source_dirs(self) -> tuple[Path, ...]:
        """src/ first (``from bolts import X``), then the project dir
        (``from src.bolts import X``), then the topology file's dir."""
        dirs = [self.src_dir, self.project_dir, self.topology_file.parent]
        return tuple(dict.fromkeys(d for d in dirs if d is not None))

    @property
    def working_dir(self) -> Path:
        return self.src_dir or self.project_dir or self.topology_file.parent


def topology_error(
    message: str, *, component: str | None = None, fix: str | None = None
) -> TopologyError:
    """A TopologyError that remembers its bare message, so a location can be added later."""
    err = TopologyError(message, component=component, fix=fix)
    err.detail = message  # type: ignore[attr-defined]
    return err


def with_location(err: TopologyError, where: str) -> TopologyError:
    """The same error, saying where in the user's files it was declared."""
    detail = getattr(err, "detail", None) or str(err)
    located = topology_error(
        f"{detail} (declared at {where})", component=err.component, fix=err.fix
    )
    return located


# -- project discovery --------------------------------------------------------
def read_project_config(project_dir: Path) -> dict[str, Any]:
    path = project_dir / "config.json"
    if not path.is_file():
        return {}
    try:
        config = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise topology_error(
            f"{path} is not valid JSON: {exc}", fix="fix the JSON syntax of config.json"
        ) from None
    if not isinstance(config, dict):
        raise topology_error(f"{path} must hold a JSON object, not {type(config).__name__}")
    return config


def find_project_dir(topology_file: Path) -> Path | None:
    """The project a topology file belongs to: the nearest dir above it with config.json."""
    for candidate in (topology_file.parent, topology_file.parent.parent):
        if (candidate / "config.json").is_file():
            return candidate
    return None


def topology_files(project_dir: Path, config: dict[str, Any]) -> list[Path]:
    specs_dir = project_dir / str(config.get("topology_specs", DEFAULT_TOPOLOGY_SPECS))
    return sorted(p for p in specs_dir.glob("*.py") if p.name != "__init__.py")


def layout_for_file(path: Path) -> Layout:
    path = path.resolve()
    if not path.is_file():
        raise topology_error(f"topology file {path} does not exist")
    project_dir = find_project_dir(path)
    config = read_project_config(project_dir) if project_dir else {}
    return Layout(path, path.stem, project_dir, config)


def layout_for_project(project_dir: Path, name: str | None) -> Layout:
    """Pick ``topologies/NAME.py`` like ``sparse run -n NAME`` (the only one if no name)."""
    project_dir = project_dir.resolve()
    config = read_project_config(project_dir)
    files = topology_files(project_dir, config)
    specs = config.get("topology_specs", DEFAULT_TOPOLOGY_SPECS)
    if not files:
        raise topology_error(
            f"no topology definitions in {project_dir / specs}",
            fix="point at a streamparse project (config.json, topologies/NAME.py, src/) "
            "or pass a topology file",
        )
    names = [p.stem for p in files]
    if name is None:
        if len(files) > 1:
            raise topology_error(
                f"project {project_dir} defines several topologies: {names}",
                fix=f"choose one by name, e.g. -n {names[0]}",
            )
        return Layout(files[0], names[0], project_dir, config)
    if name not in names:
        raise topology_error(
            f"no topology {name!r} in {project_dir / specs}; topologies are {names}",
            fix=f"use one of {names}",
        )
    return Layout(files[names.index(name)], name, project_dir, config)


# -- sys.path and sys.modules -------------------------------------------------
def _is_under(path: str | os.PathLike[str] | None, root: Path) -> bool:
    if not path:
        return False
    try:
        Path(path).resolve().relative_to(root)
        return True
    except ValueError:
        return False


def _module_locations(module: ModuleType) -> list[str]:
    if getattr(module, "__file__", None):
        return [str(module.__file__)]
    return [str(p) for p in getattr(module, "__path__", [])]


def _top_level_names(directory: Path) -> set[str]:
    names = set()
    for entry in directory.iterdir():
        if entry.suffix == ".py":
            names.add(entry.stem)
        elif entry.is_dir() and entry.name.isidentifier():
            names.add(entry.name)
    return names


def evict_foreign_modules(names: Iterable[str], root: Path) -> None:
    """Forget cached modules named ``names`` (or below) not loaded from ``root``."""
    wanted = set(names)
    for mod_name in list(sys.modules):
        top = mod_name.partition(".")[0]
        module = sys.modules.get(mod_name)
        if top not in wanted or module is None:
            continue
        locations = _module_locations(module)
        if locations and not all(_is_under(loc, root) for loc in locations):
            del sys.modules[mod_name]


@contextmanager
def sources_first(source_dirs: Sequence[str]) -> Iterator[None]:
    """Give ``source_dirs`` priority on sys.path while importing user code.

    Afterwards they stay on sys.path but at the end (as ``sparse`` appends
    them), so a project's ``src/queue.py`` cannot shadow the standard library
    for the rest of the process; code the user imports lazily still resolves.
    """
    dirs = list(dict.fromkeys(source_dirs))
    sys.path[:0] = dirs
    # Only the finders of these dirs may hold stale listings (files written since). The
    # global importlib.invalidate_caches() re-reads every zip on sys.path (pyspark.zip,
    # py4j, shipped projects): ~0.5 s per call in a Spark worker, paid per task.
    for directory in dirs:
        finder = sys.path_importer_cache.get(directory)
        if finder is not None and hasattr(finder, "invalidate_caches"):
            finder.invalidate_caches()
    try:
        yield
    finally:
        for directory in dirs:
            if directory in sys.path:
                sys.path.remove(directory)  # our prepended copy: the first occurrence
            if directory not in sys.path:
                sys.path.append(directory)


def evict_for_layout(layout: Layout) -> None:
    """Evict stale modules of the names this project provides (see the module docstring)."""
    if layout.src_dir is not None:
        evict_foreign_modules(_top_level_names(layout.src_dir), layout.src_dir)
    if layout.project_dir is not None:
        evict_foreign_modules({"src"}, layout.project_dir)
    evict_foreign_modules({layout.topology_name}, layout.topology_file.parent)


def evict_for_class_path(class_path: str, source_dirs: Sequence[str]) -> None:
    """Before importing ``class_path``: evict its top-level package if loaded from elsewhere."""
    top = class_path.partition(".")[0]
    for directory in map(Path, source_dirs):
        if (directory / top).is_dir() or (directory / f"{top}.py").is_file():
            evict_foreign_modules({top}, directory.resolve())
            return


# -- importing user code with errors that point at the user's line -------------
def user_location(exc: BaseException, roots: Sequence[Path]) -> tuple[str, int, str] | None:
    """(file, line, source text) of the deepest traceback frame in the user's code."""
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        return exc.filename, exc.lineno, (exc.text or "").strip()
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        in_user_code = any(_is_under(frame.filename, r) for r in roots)
        if in_user_code and "site-packages" not in frame.filename:
            found = (frame.filename, frame.lineno or 0, (frame.line or "").strip())
    return found


def describe_location(location: tuple[str, int, str] | None, roots: Sequence[Path]) -> str:
    if location is None:
        return "<unknown location>"
    filename, line, text = location
    shown = filename
    for root in roots:
        if _is_under(filename, root):
            shown = os.path.relpath(filename, root.parent)
            break
    return f"{shown}:{line}" + (f" `{text}`" if text else "")


def import_failure(exc: BaseException, what: str, roots: Sequence[Path]) -> TopologyError:
    """A TopologyError for an exception raised while importing user code."""
    where = describe_location(user_location(exc, roots), roots)
    fix = "fix the error at that line"
    if isinstance(exc, ModuleNotFoundError):
        fix = (
            f"check that module {exc.name!r} exists in the project; stormshift puts "
            f"{[str(r) for r in roots]} on sys.path, as `sparse run` does"
        )
    return topology_error(
        f"importing {what} failed: {type(exc).__name__}: {exc} (at {where})", fix=fix
    )


def import_topology_module(layout: Layout) -> ModuleType:
    """Import the topology file as module ``NAME`` (as sparse does)."""
    evict_for_layout(layout)
    with sources_first([str(d) for d in layout.source_dirs]):
        spec = importlib.util.find_spec(layout.topology_name)
        origin = Path(spec.origin).resolve() if spec and spec.origin else None
        if origin != layout.topology_file:
            raise topology_error(
                f"topology module name {layout.topology_name!r} is shadowed by {origin}, "
                f"so executors could not import {layout.topology_file}",
                fix="rename the topology file (or the module that shadows it)",
            )
        return importlib.import_module(layout.topology_name)


def traceback_frames(tb: TracebackType | None) -> Iterable[Any]:
    """Frames of a traceback, outermost first."""
    while tb is not None:
        yield tb.tb_frame
        tb = tb.tb_next
