"""Where a topology's code lives, and importing it the way ``sparse run`` does.

A streamparse project is a directory with ``config.json``, ``topologies/``
(one ``NAME.py`` per topology) and ``src/`` (the components). ``sparse`` puts
``src/`` and ``topologies/`` on ``sys.path`` and imports ``topologies/NAME.py``
as module ``NAME``; real projects import components either as
``from bolts import X`` (``src/`` on the path) or ``from src.bolts import X``
(project dir on the path), so all three directories are *source dirs*.

Where the source dirs go on ``sys.path`` and which project's ``bolts``
``sys.modules`` holds when several projects load in one process is one policy,
``stormshift.topology.sources.use_sources``.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
import traceback
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any

from stormshift.errors import MissingPackageError, TopologyError
from stormshift.topology.missing import classify
from stormshift.topology.sources import use_sources

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


# -- paths -------------------------------------------------------------------
def _is_under(path: str | os.PathLike[str] | None, root: Path) -> bool:
    if not path:
        return False
    try:
        Path(path).resolve().relative_to(root)
        return True
    except ValueError:
        return False


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
    """A TopologyError for an exception raised while importing user code: a
    MissingPackageError when the environment lacks a package the code imports."""
    location = user_location(exc, roots)
    where = describe_location(location, roots)
    missing = classify(exc, roots)
    if missing is not None:
        return MissingPackageError(
            f"{missing.summary} (imported at {where})", summary=missing.summary,
            package=missing.package, fix=missing.fix,
            file=location[0] if location else None, line=location[1] if location else 0,
        )
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
    """Import the topology file as module ``NAME`` (as sparse does), afresh: a cached one
    would hold classes of component modules evicted since another project was loaded."""
    use_sources(layout.source_dirs)
    sys.modules.pop(layout.topology_name, None)
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
