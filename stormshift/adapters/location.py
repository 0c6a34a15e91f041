"""Where an error happened, as the user must read it: their line, the library's beside it.

A traceback through a bolt runs framework code (stormshift, pystorm,
streamparse), the user's project and the libraries it calls (site-packages,
the standard library). The place to show is the deepest frame in the user's
*project* (files under the project directory, outside any site-packages), so
``redis.ConnectionError`` raised five frames down in redis-py is shown at the
bolt's line that called redis, with the library frame beside it:
``src/bolts.py:36 in process (raised in redis/connection.py:1437)``.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType

__all__ = ["Frame", "frames_of", "locate", "module_location", "user_location"]

_FRAMEWORK_PACKAGES = ("pystorm", "streamparse", "stormshift")
_FRAMEWORK_DIRS = tuple(
    os.path.dirname(__import__(p).__file__) + os.sep  # type: ignore[type-var, operator]
    for p in _FRAMEWORK_PACKAGES
)
_LIBRARY_MARKS = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")
_STDLIB_DIRS = tuple(sorted({os.path.abspath(p) + os.sep for p in (
    sysconfig.get_paths().get("stdlib"), sysconfig.get_paths().get("platstdlib")) if p}))


@dataclass(frozen=True)
class Frame:
    """One traceback frame: its file, module name, line and function."""

    path: str
    module: str
    line: int
    function: str

    @property
    def framework(self) -> bool:
        # A compiled module's frames name their file relative to the package root: the
        # module name tells framework from user code there (``stormshift/native.py``).
        return (self.path.startswith(_FRAMEWORK_DIRS)
                or self.module.partition(".")[0] in _FRAMEWORK_PACKAGES)

    @property
    def library(self) -> bool:
        """Installed or standard-library code (or a frame without a real file)."""
        path = self.path
        return (any(mark in path for mark in _LIBRARY_MARKS) or path.startswith(_STDLIB_DIRS)
                or path.startswith("<"))


def frames_of(tb: TracebackType | None) -> list[Frame]:
    """The frames of ``tb``, outermost first."""
    return [Frame(f.f_code.co_filename, str(f.f_globals.get("__name__", "")), lineno,
                  f.f_code.co_name) for f, lineno in traceback.walk_tb(tb)]


def locate(frames: Sequence[Frame], root: str | None = None) -> str:
    """``file:line in function`` of the deepest frame in the user's project (relative to
    ``root``, the project directory; without it, any frame that is neither framework nor
    library), plus ``(raised in lib/file.py:N)`` when a library frame below it raised.
    Without a project frame: the deepest non-framework frame, as before."""
    top = os.path.abspath(root) + os.sep if root else None

    def mine(f: Frame) -> bool:
        if f.framework or f.library:
            return False
        return top is None or (os.path.isabs(f.path) and f.path.startswith(top))

    user = next((i for i in range(len(frames) - 1, -1, -1) if mine(frames[i])), None)
    if user is None and top is not None:  # a component imported from outside the project
        user = next((i for i in range(len(frames) - 1, -1, -1)
                     if not frames[i].framework and not frames[i].library), None)
    if user is None:
        found = ""
        for f in frames:
            if not found or not f.framework:
                found = f"{_shown(f.path, top)}:{f.line} in {f.function}"
        return found or "unknown"
    f = frames[user]
    here = f"{_shown(f.path, top)}:{f.line} in {f.function}"
    below = [g for g in frames[user + 1:] if not g.framework]
    if below:
        lib = below[-1]
        here += f" (raised in {_library_path(lib.path)}:{lib.line})"
    return here


def user_location(tb: TracebackType | None, root: str | None = None) -> str:
    """``locate`` over a traceback: what the run summary and the dead letters show."""
    return locate(frames_of(tb), root)


def module_location(tb: TracebackType | None) -> str:
    """``module:line in function`` of the innermost frame outside the framework (the
    ``ComponentFailure`` message's ``at``, when no project location is known)."""
    found = "unknown"
    for f in frames_of(tb):
        if found == "unknown" or not f.framework:
            found = f"{f.module or '?'}:{f.line} in {f.function}"
    return found


def _shown(path: str, top: str | None) -> str:
    if top and os.path.isabs(path) and path.startswith(top):
        return os.path.relpath(path, top)
    return path


def _library_path(path: str) -> str:
    """``redis/connection.py`` for a file of an installed package: relative to the longest
    ``sys.path`` entry holding it (site-packages, the standard library)."""
    best = ""
    for entry in sys.path:
        base = os.path.abspath(entry or ".") + os.sep
        if path.startswith(base) and len(base) > len(best):
            best = base
    for mark in _LIBRARY_MARKS:
        if mark in path and len(path.split(mark, 1)[0]) + len(mark) > len(best):
            best = path.split(mark, 1)[0] + mark
    return path[len(best):] if best else os.path.basename(path)
