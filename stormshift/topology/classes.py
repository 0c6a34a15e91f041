"""Naming a component class so another process can import it again.

A graph stores ``class_path = "module.QualName"``; executors (Spark Python
workers, other processes) call :func:`import_component_class` with
``graph.source_dirs``, which puts them on ``sys.path`` (``sources.use_sources``). A class defined in the topology file itself is
importable because the topology file is a module (``NAME``) in a source dir.
"""

from __future__ import annotations

import importlib
import site
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path

from stormshift.errors import MissingPackageError, TopologyError
from stormshift.topology.project import import_failure, topology_error
from stormshift.topology.sources import use_sources


def _library_roots() -> tuple[Path, ...]:
    roots = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots.update(site.getsitepackages())
    return tuple(Path(r).resolve() for r in roots)


def module_root(module_name: str) -> Path | None:
    """The sys.path entry a loaded module was imported from (None for installed libraries)."""
    module = sys.modules.get(module_name)
    file = getattr(module, "__file__", None)
    if not file:
        return None
    path = Path(file).resolve()
    depth = module_name.count(".") + (1 if path.name == "__init__.py" else 0)
    root = path.parents[depth]
    if any(root == lib or lib in root.parents for lib in _library_roots()):
        return None
    return root


def class_path_of(cls: type, component: str) -> tuple[str, Path | None]:
    """``("module.QualName", source root)`` for a class, refusing ones other processes can't import."""
    if "<locals>" in cls.__qualname__:
        raise topology_error(
            f"class {cls.__qualname__} is defined inside a function, so executors cannot import it",
            component=component,
            fix="define the component class at module level (in src/ or in the topology file)",
        )
    module_name = cls.__module__
    if module_name == "__main__":
        main_file = getattr(sys.modules["__main__"], "__file__", None)
        if not main_file:
            raise topology_error(
                f"class {cls.__qualname__} is defined in an interactive session",
                component=component,
                fix="define the component class in a module file",
            )
        path = Path(main_file).resolve()
        return f"{path.stem}.{cls.__qualname__}", path.parent
    return f"{module_name}.{cls.__qualname__}", module_root(module_name)


def _resolve(module: object, attrs: Sequence[str]) -> object:
    obj = module
    for attr in attrs:
        obj = getattr(obj, attr)
    return obj


def import_component_class(class_path: str, source_dirs: Sequence[str] = ()) -> type:
    """Import ``"module.QualName"`` with ``source_dirs`` on sys.path.

    Raises TopologyError naming the class path and, for a failure inside the
    user's module, the user's file and line.
    """
    use_sources(source_dirs)
    return _import_class(class_path, source_dirs)


def _import_class(class_path: str, source_dirs: Sequence[str]) -> type:
    parts = class_path.split(".")
    roots = [Path(d) for d in source_dirs]
    for split in range(len(parts) - 1, 0, -1):
        module_name = ".".join(parts[:split])
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
                continue  # this prefix is not a module; try a shorter one
            raise import_failure(exc, f"component class {class_path}", roots) from None
        except Exception as exc:  # noqa: BLE001 - the user's module raised while importing
            raise import_failure(exc, f"component class {class_path}", roots) from None
        try:
            obj = _resolve(module, parts[split:])
        except AttributeError:
            break
        if not isinstance(obj, type):
            raise topology_error(f"{class_path} is a {type(obj).__name__}, not a class")
        return obj
    raise topology_error(
        f"cannot import component class {class_path!r} (source dirs: {list(source_dirs)})",
        fix="check the module path and class name, and that the project's src/ is present "
        "on this machine",
    )


def check_importable(class_path: str, source_dirs: Sequence[str], component: str) -> type:
    """Import a class at load time, so a typo fails now instead of in an executor."""
    try:
        return import_component_class(class_path, source_dirs)
    except MissingPackageError:
        raise  # names the package and the import statement already
    except TopologyError as err:
        detail = getattr(err, "detail", None) or str(err)
        raise topology_error(detail, component=component, fix=err.fix) from None
