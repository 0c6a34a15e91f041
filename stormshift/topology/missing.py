"""Telling an import the environment cannot satisfy from a bug in the project's own code.

A project that runs on its Storm cluster often imports packages the machine
porting it does not have (a team's internal client, a driver installed by the
cluster's provisioning). That is not a bug to read a traceback for: the user
needs the package's name, the import statement, and ``pip install``. A module
of the project itself that does not exist (a typo, a file left out) keeps the
generic import error, which points at the same line.

:func:`classify` is pure apart from ``importlib``'s finders (it imports nothing).
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

__all__ = ["Missing", "classify"]

_NAME = re.compile(r"cannot import name '([^']+)'")


@dataclass(frozen=True)
class Missing:
    """What an ImportError says is missing.

    ``package`` is the top-level import name; ``module`` the dotted module that
    failed; ``installed`` whether ``package`` itself is importable (then its
    ``module`` or ``name`` -- the attribute ``from module import name`` did not
    find -- is what this version lacks); ``version`` its distribution's version.
    """

    package: str
    module: str
    installed: bool = False
    name: str | None = None
    version: str | None = None
    shadowed_by: str | None = None  # the project has ``package`` too; this one came first

    @property
    def summary(self) -> str:
        if self.shadowed_by is not None:
            return (f"the project's own package {self.package!r} is shadowed by "
                    f"{self.shadowed_by} (found first on sys.path), which has no module "
                    f"{self.module!r}")
        if not self.installed:
            return f"package {self.package!r} is not installed"
        which = f"installed package {self.package!r}" + (f" {self.version}" if self.version else "")
        if self.name is not None:
            return f"{which} has no name {self.name!r} in module {self.module!r}"
        return f"{which} has no module {self.module!r}"

    @property
    def fix(self) -> str:
        if self.shadowed_by is not None:
            return (f"take {os.path.dirname(self.shadowed_by.rstrip(os.sep))} off sys.path "
                    "(PYTHONPATH, or the code that inserted it), or uninstall or rename the "
                    f"other {self.package!r}")
        if not self.installed:
            return (f"pip install {self.package}, or add it to the project's requirements "
                    "(a module of the project itself belongs in src/)")
        return (f"install the version of {self.package} the project was written for "
                f"(pip install '{self.package}==VERSION'), and pin it in the project's requirements")


def classify(exc: BaseException, roots: Sequence[Path]) -> Missing | None:
    """The package an ImportError raised while importing user code says is missing, or None
    when the missing module or name belongs to the project (``roots``: its source dirs)."""
    if not isinstance(exc, ImportError) or not exc.name:
        return None
    module = exc.name
    package = module.partition(".")[0]
    if isinstance(exc, ModuleNotFoundError):
        origin = _origin(package)
        if origin is None:
            return Missing(package, module) if _absent_from(package, roots) else None
        if _under(origin, roots):
            return None
        if not _absent_from(package, roots):
            return Missing(package, module, True, version=_version(package),
                           shadowed_by=_package_dir(origin))
        return Missing(package, module, True, version=_version(package))
    match = _NAME.match(str(exc))
    if match is None or exc.path is None or _under(exc.path, roots):
        return None  # a circular import, a broken extension, or a name the project lacks
    return Missing(package, module, True, match[1], _version(package))


def _origin(package: str) -> str | None:
    """Where ``import package`` would come from (a file or a namespace package's dir)."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.origin and spec.origin not in ("built-in", "frozen", "namespace"):
        return spec.origin
    locations = list(spec.submodule_search_locations or [])
    return locations[0] if locations else spec.origin


def _package_dir(origin: str) -> str:
    """A package's folder from its spec's origin (its ``__init__.py``), else the module file."""
    return os.path.dirname(origin) if os.path.basename(origin).startswith("__init__.") else origin


def _absent_from(package: str, roots: Sequence[Path]) -> bool:
    """No file of the project is named like the package (a stale listing would be a bug of
    ours, not a missing package)."""
    return not any((r / package).exists() or (r / f"{package}.py").exists() for r in roots)


def _under(path: str | os.PathLike[str], roots: Sequence[Path]) -> bool:
    resolved = Path(path).resolve()
    return any(resolved.is_relative_to(Path(r).resolve()) for r in roots)


def _version(package: str) -> str | None:
    for dist in metadata.packages_distributions().get(package, []):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None
