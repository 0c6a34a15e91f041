"""The import graph of a tree of Python modules, read with ``ast`` (nothing is imported).

What counts as an edge A -> B: every ``import`` / ``from ... import`` statement in
A's file, at module level, inside functions and under ``if TYPE_CHECKING:``
alike -- a function-level import defers the circle to the first call, it does
not remove it, and a type-only import still ties the two modules' designs.
``from P import name`` is an edge to ``P.name`` when that is a module of the
tree (a submodule import), else to ``P`` itself (a name ``P/__init__.py``
defines or re-exports). A package's ``__init__`` is not an edge of its
submodules: Python loads parents first for every import, so counting it would
make every package that re-exports its children a circle. ``native.load("pkg.mod")``
(a compiled module loaded by name) is an import of ``pkg.mod`` like any other, and with
``modules_under(..., compiled=True)`` a Cython module (``*.pyx``) is a module whose
column-0 ``import`` / ``from ... import`` / ``cimport`` lines are its imports (read as text:
a ``cimport`` ties the two modules' C layouts, so it counts).
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Edge", "cycles", "import_edges", "modules_under", "parsed"]


@dataclass(frozen=True)
class Edge:
    """Module ``source`` imports module ``target`` at ``line`` of ``path``."""

    source: str
    target: str
    path: Path
    line: int


def modules_under(root: Path, package: str | None = None, *,
                  compiled: bool = False) -> dict[str, Path]:
    """Dotted module name -> file for every ``*.py`` under ``root`` (a package directory
    named ``package``, or with ``package=None`` a flat directory of top-level modules);
    with ``compiled``, every ``*.pyx`` too."""
    found: dict[str, Path] = {}
    paths = list(root.rglob("*.py")) + (list(root.rglob("*.pyx")) if compiled else [])
    for path in sorted(paths):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(([package] if package else []) + parts)] = path
    return found


def _imported(node: ast.AST, here: str, is_package: bool, known: dict[str, Path]) -> Iterable[str]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = here.split(".") if is_package else here.split(".")[:-1]
            base = base[:len(base) - (node.level - 1)]
            module = ".".join(base + ([node.module] if node.module else []))
        else:
            module = node.module or ""
        for alias in node.names:
            sub = f"{module}.{alias.name}"
            yield sub if sub in known else module


@functools.cache
def parsed(path: Path) -> ast.Module:
    """``path``'s syntax tree, parsed once per test process: several house rules read the
    same files, which do not change during a session (callers must not modify the tree)."""
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


@functools.cache
def _import_statements(path: Path) -> tuple[ast.Import | ast.ImportFrom, ...]:
    """Import statements, and ``native.load("pkg.mod")`` calls as the imports they are (a
    compiled module loaded by its name: invisible to ``import`` alone, as the data plane's
    ``cwire`` was to the layer rules)."""
    if path.suffix == ".pyx":
        return _cython_imports(path)
    out: list[ast.Import | ast.ImportFrom] = []
    for n in ast.walk(parsed(path)):
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            out.append(n)
        elif _native_load(n):
            assert isinstance(n, ast.Call)
            name = n.args[0]
            assert isinstance(name, ast.Constant)
            out.append(ast.Import(names=[ast.alias(name=str(name.value))], lineno=n.lineno,
                                  col_offset=n.col_offset))
    return tuple(out)


_CYTHON_IMPORT = re.compile(r"^(?:from\s+([\w.]+)\s+c?import\s+([\w, ]+)|c?import\s+([\w.]+))",
                            re.MULTILINE)


def _cython_imports(path: Path) -> tuple[ast.Import | ast.ImportFrom, ...]:
    """A ``.pyx`` file's module-level imports and cimports, as the statements they are."""
    text = path.read_text(encoding="utf-8")
    out: list[ast.Import | ast.ImportFrom] = []
    for m in _CYTHON_IMPORT.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        if m.group(1):
            names = [ast.alias(name=n.strip().split(" as ")[0]) for n in m.group(2).split(",")
                     if n.strip()]
            out.append(ast.ImportFrom(module=m.group(1), names=names, level=0, lineno=line,
                                      col_offset=0))
        else:
            out.append(ast.Import(names=[ast.alias(name=m.group(3))], lineno=line, col_offset=0))
    return tuple(out)


def _native_load(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "load" and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "native" and len(node.args) == 1
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str))


def import_edges(known: dict[str, Path], *, outside: bool = False) -> list[Edge]:
    """Every import between two modules of ``known`` (see the module doc for what counts);
    with ``outside``, every import of a module of ``known``, whatever it imports (a
    third-party module, ``pyspark.sql``, ``redis``), named as the statement names it."""
    edges: dict[Edge, None] = {}  # one edge per statement, however many names it imports
    for name, path in known.items():
        for node in _import_statements(path):
            for target in _imported(node, name, path.name == "__init__.py", known):
                if (outside or target in known) and target != name:
                    edges[Edge(name, target, path, getattr(node, "lineno", 0))] = None
    return list(edges)


def cycles(edges: list[Edge]) -> list[list[Edge]]:
    """The import circles: for each strongly connected component of more than one module
    (Tarjan's algorithm, iterative), the edges inside it, sorted."""
    graph: dict[str, set[str]] = {}
    for e in edges:
        graph.setdefault(e.source, set()).add(e.target)
        graph.setdefault(e.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.add(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        components.append(component)
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return [sorted((e for e in edges if e.source in c and e.target in c),
                   key=lambda e: (e.source, e.target, e.line)) for c in components]
