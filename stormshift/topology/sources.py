"""Where a project's source dirs sit on ``sys.path``, and whose modules ``sys.modules`` holds.

Every process that imports user code calls :func:`use_sources` first: the
driver and the local engine (loading a topology, importing a component class),
Spark's planner process (a generic spout) and Spark's Python workers. One
policy everywhere:

- **After the standard library and the installed packages.** Source dirs go at
  the end of ``sys.path``, where ``sparse`` appends them, so a project's
  ``src/queue.py`` or ``src/json.py`` never replaces a standard module, for the
  framework, for pyspark or for the user's own code (``stormshift check`` names
  such a file: :func:`shadowed_modules`). The dirs of the project in use come
  first among the source dirs.
- **One project's modules at a time.** Tests and shadow runs load several
  projects in one process, and most projects have ``spouts`` and ``bolts``
  packages. When the source dirs in use change, a cached module whose top-level
  name the new project provides is evicted from ``sys.modules`` if it was loaded
  from another project's source dir, so the next import finds this project's.
  So is one loaded from a directory no longer on ``sys.path`` (a caller's own
  ``sys.path`` edit, undone since), checked on every call by the top-level names
  alone. Modules of the standard library, of installed packages and of any other
  directory still on ``sys.path`` are never evicted.

A source dir already on ``sys.path`` (``PYTHONPATH``, the current directory of
``python -m``) moves to the end too: the policy holds wherever the process started.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
from collections.abc import Iterable, Sequence

__all__ = ["provided_names", "shadowed_modules", "use_sources"]

_placed: list[str] = []  # every source dir used in this process, in their order on sys.path
_active: tuple[str, ...] = ()  # the dirs of the last use_sources call


def use_sources(source_dirs: Iterable[str | os.PathLike[str]]) -> None:
    """Make ``source_dirs`` (one project's, in import order) the ones imports resolve to."""
    global _active
    ours = tuple(dict.fromkeys(os.fspath(d) for d in source_dirs))
    if ours != _active or _strays(ours):
        _evict_other_projects(ours)
    _place(ours)
    _active = ours
    for directory in ours:
        # Only these dirs' finders may hold stale listings (files written since). The global
        # importlib.invalidate_caches() re-reads every zip on sys.path (pyspark.zip, py4j,
        # shipped projects): ~0.5 s per call in a Spark worker, paid per task.
        finder = sys.path_importer_cache.get(directory)
        if finder is not None and hasattr(finder, "invalidate_caches"):
            finder.invalidate_caches()


def _place(ours: Sequence[str]) -> None:
    """The placed dirs at the end of sys.path, ``ours`` first among them."""
    order = list(ours) + [d for d in _placed if d not in ours]
    placed, cut = set(order), len(sys.path) - len(order)
    if _placed == order and sys.path[cut:] == order and placed.isdisjoint(sys.path[:cut]):
        return
    sys.path[:] = [p for p in sys.path if p not in placed] + order
    _placed[:] = order


def provided_names(directory: str | os.PathLike[str]) -> set[str]:
    """Top-level module names a source dir provides (modules and packages); never
    ``__pycache__``, the bytecode cache Python writes beside every imported module."""
    names: set[str] = set()
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return names
    suffixes = tuple(importlib.machinery.all_suffixes())
    for entry in entries:
        if entry.is_dir():
            if entry.name.isidentifier() and entry.name != "__pycache__":
                names.add(entry.name)
        elif entry.name.endswith(suffixes):
            names.add(entry.name.partition(".")[0])
    return names


def _import_root(name: str, module: object) -> str | None:
    """The sys.path entry ``module`` (named ``name``) was imported from."""
    file = getattr(module, "__file__", None)
    if file:
        root = os.path.dirname(file)
        levels = name.count(".") + (1 if os.path.basename(file).startswith("__init__.") else 0)
    else:  # a namespace package
        locations = list(getattr(module, "__path__", None) or [])
        if not locations:
            return None
        root, levels = locations[0], name.count(".") + 1
    for _ in range(levels):
        root = os.path.dirname(root)
    return root


def _evict_other_projects(ours: Sequence[str]) -> None:
    """Forget modules named like ours that another project placed, or that came from a dir no
    longer on sys.path: either would stand in for this project's ``bolts`` or ``spouts``."""
    provided = set().union(*(provided_names(d) for d in ours))
    _provided[tuple(ours)] = frozenset(provided)
    for name, module in list(sys.modules.items()):
        if name.partition(".")[0] in provided and _foreign(name, module, ours):
            del sys.modules[name]


def _foreign(name: str, module: object, ours: Sequence[str]) -> bool:
    root = _import_root(name, module)
    return root is not None and root not in ours and (root in _placed or root not in sys.path)


_provided: dict[tuple[str, ...], frozenset[str]] = {}  # top-level names, per dirs in use


def _strays(ours: tuple[str, ...]) -> bool:
    """A top-level module named like one of ours came from elsewhere since the last call (a
    few dict lookups: this runs per task in Spark's workers)."""
    names = _provided.get(ours, ())
    return any((m := sys.modules.get(n)) is not None and _foreign(n, m, ours) for n in names)


def _library_paths() -> list[str]:
    """sys.path entries of the standard library and the installed packages."""
    import site
    import sysconfig

    roots = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots.update(site.getsitepackages())
    roots = {os.path.realpath(r) for r in roots}
    return [p for p in sys.path
            if any(os.path.realpath(p or ".").startswith(r) for r in roots)]


def shadowed_modules(source_dir: str | os.PathLike[str]) -> dict[str, str]:
    """Module name -> where it comes from instead, for each top-level module of
    ``source_dir`` that the standard library or an installed package also provides:
    importing that name never gets the project's file."""
    from importlib.machinery import PathFinder

    libraries = _library_paths()
    out: dict[str, str] = {}
    for name in sorted(provided_names(source_dir)):
        if name in sys.builtin_module_names:
            out[name] = "built into Python"
            continue
        spec = PathFinder.find_spec(name, libraries)
        if spec is not None:
            out[name] = str(spec.origin or next(iter(spec.submodule_search_locations or []), ""))
    return out
