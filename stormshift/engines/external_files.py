"""A shadow run's sides write their own files, never the production ones.

A bolt that appends to a hard-coded file (``open("/var/log/clicks/audit.log", "a")``) cannot be
pointed elsewhere through config, and a shadow would run the write on both sides: every line
twice in the real file. While the graph's config holds ``stormshift.shadow.scratch_files`` (a
directory per side), a file the project's own code opens for writing is opened at the same
path under that directory instead (``/var/log/x.log`` -> ``SCRATCH/var/log/x.log``), and a file
it opens for reading is read from there when the side wrote it. The project's code is told
apart by the first frame outside the standard library that asks (so ``Path.write_text`` from a
bolt is the bolt's, while stormshift's own log files, opened from its modules, keep their
path). The shadow then reads both directories and compares their lines (``dump_files``).

Patched: ``builtins.open`` and ``io.open`` (``pathlib`` and ``codecs`` open through them).
``os.open`` and file descriptors are left alone: a descriptor names no path.
"""

from __future__ import annotations

import builtins
import io
import os
import sys
import sysconfig
import threading
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

from stormshift.topology.graph import TopologyGraph

__all__ = ["SCRATCH_FILES_KEY", "dump_files", "redirect_files", "redirect_files_for", "scratch_path"]

SCRATCH_FILES_KEY = "stormshift.shadow.scratch_files"
_WRITES = frozenset("wax+")
_UNTOUCHED = ("/dev/", "/proc/", "/sys/")
_PATHS = sysconfig.get_paths()
_STDLIB = tuple(os.path.realpath(_PATHS[k]).rstrip(os.sep) + os.sep for k in ("stdlib", "platstdlib"))
_INSTALLED = tuple(os.path.realpath(_PATHS[k]).rstrip(os.sep) + os.sep for k in ("purelib", "platlib"))
_lock = threading.Lock()
_target: dict[str, Any] = {}  # "dir": scratch directory, "roots": the project's directories
_original: list[Any] = []


def scratch_path(scratch: str, path: str) -> str:
    """Where ``path`` (absolute) lands under ``scratch``: the same path below it."""
    return os.path.join(scratch, path.lstrip(os.sep))


def _asker_is_project(roots: tuple[str, ...]) -> bool:
    """Whether the first frame outside the standard library and this module is the project's."""
    frame: FrameType | None = sys._getframe(2)
    here = os.path.realpath(__file__)
    while frame is not None:
        name = os.path.realpath(frame.f_code.co_filename)
        stdlib = name.startswith(_STDLIB) and not name.startswith(_INSTALLED)
        if name != here and not stdlib and not name.startswith("<frozen"):
            return name.startswith(roots)
        frame = frame.f_back
    return False


def _redirected(file: Any, mode: str, target: dict[str, Any]) -> Any:
    if isinstance(file, int) or not target:
        return file
    try:
        path = os.path.abspath(os.fsdecode(os.fspath(file)))
    except TypeError:
        return file
    scratch = target["dir"]
    if path.startswith(_UNTOUCHED) or path.startswith(scratch + os.sep) or path == scratch:
        return file
    if not _asker_is_project(target["roots"]):
        return file
    moved = scratch_path(scratch, path)
    if _WRITES & set(mode):
        os.makedirs(os.path.dirname(moved), exist_ok=True)
        return moved
    return moved if os.path.exists(moved) else file


def redirect_files(scratch: str | None, roots: tuple[str, ...] = ()) -> None:
    """From now on (``scratch``) or no longer (None), the project's file opens in this process
    go to ``scratch``."""
    with _lock:
        if scratch is None:
            _target.clear()
            return
        _target.update(dir=os.path.realpath(scratch), roots=tuple(
            os.path.realpath(r).rstrip(os.sep) + os.sep for r in roots if r))
        if _original:
            return
        original = io.open
        _original.append(original)

        def open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
            return original(_redirected(file, mode, dict(_target)), mode, *args, **kwargs)

        builtins.open = open
        io.open = open


def redirect_files_for(graph: TopologyGraph) -> bool:
    """``redirect_files`` as the graph's config says (its ``SCRATCH_FILES_KEY``)."""
    scratch = (graph.config or {}).get(SCRATCH_FILES_KEY)
    if not scratch:
        if _target:
            redirect_files(None)
        return False
    roots = [*getattr(graph, "source_dirs", ()), getattr(graph, "project_dir", None) or ""]
    redirect_files(scratch, tuple(r for r in roots if r))
    return True


def dump_files(scratch: str) -> dict[str, int]:
    """Every line a side wrote, as ``PATH[LINE]`` -> how many times: lines, not bytes, and a
    count, not an order (two tasks append in whatever order they ran)."""
    out: Counter[str] = Counter()
    root = Path(scratch)
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        shown = "/" + file.relative_to(root).as_posix()
        for line in file.read_bytes().decode("utf-8", "replace").splitlines():
            out[f"{shown}[{line}]"] += 1
    return dict(sorted(out.items()))
