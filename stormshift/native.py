"""The per-tuple hot path: compiled where the install built it, the source where not.

``pip install`` compiles the modules in ``COMPILED`` with Cython (``setup.py``):
the same sources, no type declarations, about a third less framework time per
tuple (``bench/README.md``, "compiled hot path"). The ``.py`` files stay the truth:

- a compiled module is used only while it was built from the source beside it
  (``_compiled.json`` records each source's digest at build time); after an edit
  (an editable install) the source is imported instead, with a warning to rebuild;
- where no compiler or Cython was at hand, nothing is compiled and everything
  runs from source, quietly;
- ``STORMSHIFT_PURE=1`` imports every source (debugging, A/B measurements).

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

__all__ = ["COMPILED", "RECORD", "install", "source_digest", "stale", "status", "summary"]

COMPILED = (
    "stormshift.adapters.fastpath",
    "stormshift.adapters.hashing",
    "stormshift.adapters.kernel",
    "stormshift.adapters.routing",
    "stormshift.adapters.tuples",
    "stormshift.engines.spark.rows",
    "stormshift.engines.spark.source.spoutread",
    "stormshift.engines.spark.task.output",
    "stormshift.engines.spark.task.stage",
    "stormshift.spouts.jsonlines",
)
"""Modules on the per-tuple path inside a Spark task (decode, tuple, emit, route, rows)."""

RECORD = "_compiled.json"
PURE_ENV = "STORMSHIFT_PURE"


def source_digest(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def source_path(root: str, module: str) -> str:
    """``root`` is the directory holding the top package."""
    return os.path.join(root, *module.split(".")) + ".py"


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


def status(root: str | None = None) -> dict[str, str]:
    """module -> ``"compiled"`` or why it runs from source (for the bench and doctors)."""
    root = root or _root()
    pure = bool(os.environ.get(PURE_ENV))
    record = _read_record(os.path.join(root, "stormshift"))
    out = {}
    for module in COMPILED:
        if built_path(root, module) is None:
            out[module] = "source (not compiled by this install)"
        elif pure:
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
    """Imports the listed modules from their ``.py`` even where a compiled twin exists."""

    def __init__(self, modules: Sequence[str]):
        self.modules = frozenset(modules)

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.modules or not path:
            return None
        for directory in path:
            candidate = os.path.join(directory, fullname.rpartition(".")[2] + ".py")
            if os.path.exists(candidate):
                return importlib.util.spec_from_file_location(fullname, candidate)
        return None


def install(root: str | None = None) -> list[str]:
    """Route the modules that must run from source to it; returns their names. Called
    once by ``stormshift/__init__.py``, before any of them is imported."""
    states = status(root)
    from_source = [m for m, s in states.items() if s != "compiled" and "not compiled" not in s]
    if not from_source:
        return []
    edited = [m for m, s in states.items() if s.startswith("source (edited")]
    if edited:
        warnings.warn(f"stormshift: {', '.join(edited)} changed since it was compiled; running "
                      "it from source (slower) until `pip install -e .` rebuilds it",
                      RuntimeWarning, stacklevel=3)
    if not any(isinstance(f, _SourceFirst) for f in sys.meta_path):
        sys.meta_path.insert(0, _SourceFirst(from_source))
    return from_source


def _root() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
