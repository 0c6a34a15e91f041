"""The per-tuple hot path: compiled where the install built it, the source where not.

``pip install`` compiles the modules in ``COMPILED`` with Cython (``setup.py``):
the same sources, no type declarations, only the modules whose compiled form saves
instructions per tuple (``bench/README.md``). The ``.py`` files stay the truth:

- a compiled module is used only while it was built from the source beside it
  (``_compiled.json`` records each source's digest at build time); after an edit
  (an editable install) the source is imported instead, with a warning to rebuild;
- where no compiler or Cython was at hand, nothing is compiled and everything
  runs from source, quietly;
- ``STORMSHIFT_PURE=1`` imports every source (debugging, A/B measurements);
  ``STORMSHIFT_PURE=stormshift.adapters.tuples,...`` only the listed ones (to
  measure what compiling one module is worth);
- an extension module of this package that is not a fresh build of a module in
  ``COMPILED`` (one dropped from the list since, or whose build failed) is never
  imported: its ``.py`` is.

This file is also read by ``setup.py`` before the package is importable: it
imports nothing but the standard library.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["COMPILED", "RECORD", "install", "load", "pure_modules", "source_digest", "stale", "status",
           "summary"]

COMPILED = (
    "stormshift.adapters.cemit",
    "stormshift.adapters.ckernel",
    "stormshift.adapters.fastpath",
    "stormshift.adapters.kernel",
    "stormshift.adapters.routing",
    "stormshift.adapters.tuples",
    "stormshift.engines.spark.dataplane.cwire",
    "stormshift.engines.spark.protocol.rows",
    "stormshift.engines.spark.task.output",
    "stormshift.spouts.jsonlines",
    "stormshift.state.ctracked",
    "stormshift.state.tracked",
)
"""Modules on the per-tuple path whose compiled form saves instructions there (emit, tuple,
route, rows, decode, and the tracked dicts' ``__setitem__`` a legacy bolt's every update
runs); ``bench/history.md``, "instruction counts per compiled module", shows the count per
module and why the others run from source. Four are real extensions with no ``.py`` twin,
used only while "compiled" here (``load``), the pure code otherwise: ``state/ctracked.pyx``
(typed ``cdef class``: the tracked dicts' writes in C slots, for ``state/tracked.py``), and
the data plane in C, one module per layer: ``adapters/ckernel.pyx`` (the kernel's per-tuple
loop, for ``kernel.py``), ``adapters/cemit.pyx`` (a bolt's routed, delivered emit, for
``routing.py`` and ``fastpath.py``) and ``engines/spark/dataplane/cwire.pyx`` (row cells
decoded straight into values, emits packed into rows; for ``protocol/rows.py`` and
``task/output.py``). ``cwire`` cimports ``cemit``'s ``Delivery`` (``cemit.pxd``), so a
built ``cwire`` loads the built ``cemit`` too."""

RECORD = "_compiled.json"
PURE_ENV = "STORMSHIFT_PURE"


def source_digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def source_path(root: str, module: str) -> str:
    """``root`` is the directory holding the top package; a ``.pyx`` (an extension written
    for Cython, no pure twin) where there is one, else the ``.py``."""
    base = os.path.join(root, *module.split("."))
    return base + ".pyx" if os.path.exists(base + ".pyx") else base + ".py"


def built_path(root: str, module: str) -> str | None:
    """The compiled module's file beside its source, if there is one."""
    base = os.path.join(root, *module.split("."))
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        if os.path.exists(base + suffix):
            return base + suffix
    return None


def stale(record: Mapping[str, str], digests: Mapping[str, str]) -> list[str]:
    """Modules whose compiled form was not built from their current source."""
    return sorted(m for m, digest in digests.items() if record.get(m) != digest)


def _read_record(package_dir: str) -> dict[str, str]:
    try:
        with open(os.path.join(package_dir, RECORD), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def pure_modules(value: str | None) -> frozenset[str]:
    """The modules ``STORMSHIFT_PURE=value`` runs from source: a comma-separated list of
    ``COMPILED`` names, or every one for any other non-empty value (``1``)."""
    if not value:
        return frozenset()
    names = {part.strip() for part in value.split(",") if part.strip()}
    return frozenset(names) if names and names <= set(COMPILED) else frozenset(COMPILED)


def status(root: str | None = None) -> dict[str, str]:
    """module -> ``"compiled"`` or why it runs from source (for the bench and doctors)."""
    root = root or _root()
    pure = pure_modules(os.environ.get(PURE_ENV))
    record = _read_record(os.path.join(root, "stormshift"))
    out = {}
    for module in COMPILED:
        if built_path(root, module) is None:
            out[module] = "source (not compiled by this install)"
        elif module in pure:
            out[module] = f"source ({PURE_ENV} is set)"
        elif stale(record, {module: source_digest(source_path(root, module))}):
            out[module] = "source (edited since it was compiled: pip install -e . rebuilds it)"
        else:
            out[module] = "compiled"
    return out


def summary(root: str | None = None) -> str:
    """One line for benchmark output: what the measured hot path ran as."""
    states = status(root)
    compiled = [m for m, s in states.items() if s == "compiled"]
    if len(compiled) == len(states):
        return f"hot path: compiled ({len(compiled)} modules, Cython)"
    reasons = sorted({s for s in states.values() if s != "compiled"})
    return f"hot path: {len(compiled)} of {len(states)} modules compiled; the rest {'; '.join(reasons)}"


class _SourceFirst(importlib.abc.MetaPathFinder):
    """Imports every module of the package from its ``.py`` where a compiled twin exists,
    except the ``fresh`` ones (compiled from the source beside them)."""

    def __init__(self, fresh: Sequence[str]):
        self.fresh = frozenset(fresh)

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname in self.fresh or not path or not fullname.startswith("stormshift."):
            return None
        name = fullname.rpartition(".")[2]
        for directory in path:
            base = os.path.join(directory, name)
            if os.path.isdir(base):
                return None  # a package: the normal finders
            if os.path.exists(base + ".py"):
                if any(os.path.exists(base + s) for s in importlib.machinery.EXTENSION_SUFFIXES):
                    return importlib.util.spec_from_file_location(fullname, base + ".py")
                return None
        return None


def load(module: str) -> Any:
    """A real extension of ``COMPILED`` (no ``.py`` twin) where it is "compiled" (a fresh
    build that ``STORMSHIFT_PURE`` does not name), else None: its caller's pure code runs."""
    if status().get(module) != "compiled":
        return None
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


def install(root: str | None = None) -> list[str]:
    """Route every module of the package to its source unless it is a fresh compiled one of
    ``COMPILED``; returns the ``COMPILED`` modules that have a build but run from source.
    Called once by ``stormshift/__init__.py``, before any of them is imported."""
    states = status(root)
    from_source = [m for m, s in states.items() if s != "compiled" and "not compiled" not in s]
    edited = [m for m, s in states.items() if s.startswith("source (edited")]
    if edited:
        warnings.warn(f"stormshift: {', '.join(edited)} changed since it was compiled; running "
                      "it from source (slower) until `pip install -e .` rebuilds it",
                      RuntimeWarning, stacklevel=3)
    if not any(isinstance(f, _SourceFirst) for f in sys.meta_path):
        sys.meta_path.insert(0, _SourceFirst([m for m, s in states.items() if s == "compiled"]))
    return from_source


def _root() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
