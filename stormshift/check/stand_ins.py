"""Stand-ins for packages that are not installed, so ``check`` still reads the project.

A project often imports a package only its Storm cluster has (a team's
internal client). ``check`` needs the topology's specs and the component
classes to run its rules, so one such import would hide every other finding.
While a :class:`StandIns` is active, importing a listed package gives an empty
module whose attributes are :class:`Placeholder` objects (callable,
subclassable, empty when iterated), as Sphinx's autodoc mocks imports; the
missing package itself becomes the ``missing-package`` finding. The short
run never executes code against stand-ins (the runner skips it). On exit the
stand-ins, and every module imported while they were active that refers to
one or lives in the project's source dirs (``roots``), leave ``sys.modules``:
a later load in the same process fails as it should instead of finding a
module built on a stand-in.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any, Self, TypeVar

from stormshift.errors import MissingPackageError, TopologyError

__all__ = ["MAX_STAND_INS", "Placeholder", "StandIns", "import_standing_in"]

MAX_STAND_INS = 20  # packages stood in for one project before check gives up reading it
T = TypeVar("T")


class Placeholder:
    """Any object a stood-in package provides: every use gives another placeholder."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Placeholder:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Placeholder(f"{self._name}.{attr}")

    def __call__(self, *args: object, **kwargs: object) -> Placeholder:
        return Placeholder(f"{self._name}()")

    def __iter__(self) -> Any:
        return iter(())

    def __mro_entries__(self, bases: tuple[object, ...]) -> tuple[type, ...]:
        return (object,)  # ``class X(pkg.Base)`` still defines X

    def __repr__(self) -> str:
        return f"<{self._name}: not installed>"


class _StandInModule(ModuleType):
    def __getattr__(self, attr: str) -> Placeholder:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Placeholder(f"{self.__name__}.{attr}")


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, names: set[str]) -> None:
        self.names = names

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname.partition(".")[0] not in self.names:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return _StandInModule(spec.name)

    def exec_module(self, module: ModuleType) -> None:
        return None


class StandIns:
    """A context in which the packages :meth:`add` names import as stand-ins."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.roots: tuple[Path, ...] = ()  # the project's source dirs, once known
        self._finder = _Finder(self.names)
        self._before: set[str] = set()

    def add(self, package: str) -> None:
        self.names.add(package)

    def __enter__(self) -> Self:
        self._before = set(sys.modules)
        sys.meta_path.insert(0, self._finder)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        sys.meta_path.remove(self._finder)
        if not self.names:
            return
        for name in sorted(set(sys.modules) - self._before):
            module = sys.modules[name]
            if isinstance(module, _StandInModule) or _uses_stand_in(module) \
                    or _is_under(getattr(module, "__file__", None), self.roots):
                del sys.modules[name]


def _uses_stand_in(module: ModuleType) -> bool:
    return any(isinstance(v, (_StandInModule, Placeholder)) for v in list(vars(module).values()))


def _is_under(file: str | None, roots: Sequence[Path]) -> bool:
    return bool(file) and any(Path(str(file)).resolve().is_relative_to(r.resolve()) for r in roots)


def import_standing_in(
    load: Callable[[], T], stand_ins: StandIns
) -> tuple[T | None, list[MissingPackageError]]:
    """``load()`` (an import of the user's code), standing in for each package it imports that
    is not installed, and the packages it missed. ``(None, missed)`` when it still fails after
    a stand-in, or lacks something of an installed package (nothing to stand in for)."""
    missed: list[MissingPackageError] = []
    while len(missed) <= MAX_STAND_INS:
        try:
            return load(), missed
        except MissingPackageError as err:
            missed.append(err)
            if err.package in stand_ins.names or importlib.util.find_spec(err.package):
                return None, missed
            stand_ins.add(err.package)
        except TopologyError:
            if not missed:
                raise
            return None, missed  # the code used a stand-in as it cannot be used
    return None, missed
