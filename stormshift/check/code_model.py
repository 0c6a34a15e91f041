"""What the static rules read: the project's modules, each component's code units, findings.

``Sources`` parses the project's files once; ``ComponentCode`` gathers a
component's methods from the project classes of its MRO and follows calls to
the project's functions; ``Collector`` keeps one finding per (rule, place).
Shared by ``static.py`` (the call rules), ``static_shape.py`` and
``static_state.py``, which import from here and never from each other.
"""

from __future__ import annotations

import ast
import inspect
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FunctionType, ModuleType

from stormshift.check.patterns import (
    MUTABLE_FACTORIES,
    Scope,
    import_aliases,
)
from stormshift.check.project import DeclaredComponent, DeclaredTopology, is_user_file
from stormshift.check.rules import RULES, Finding, Severity

__all__ = ["PROCESSING", "Collector", "ComponentCode", "SourceModule", "Sources", "Unit",
           "calls_name", "self_targets"]

PROCESSING = ("process", "process_batch", "process_tick")
Func = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass
class SourceModule:
    """One parsed project file and what its top level defines."""

    path: Path
    tree: ast.Module
    module: ModuleType | None
    aliases: dict[str, str]
    functions: dict[str, Func]
    mutables: dict[str, int]  # module-level containers: name -> line
    names: set[str]  # every module-level assigned name
    seeded: frozenset[str]  # random modules whose seed() the file's top level calls

    @classmethod
    def parse(cls, path: Path, module: ModuleType | None) -> SourceModule:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        aliases = import_aliases(tree.body)
        scope = Scope(aliases, module)
        mutables: dict[str, int] = {}
        names: set[str] = set()
        for stmt in tree.body:
            targets, value = _assigned(stmt)
            names.update(targets)
            if value is not None and _is_mutable(value, scope):
                mutables.update({t: stmt.lineno for t in targets})
        functions = {s.name: s for s in tree.body if isinstance(s, Func)}
        top = [s for s in tree.body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        seeded = frozenset(m for m in ("random", "numpy.random")
                           if any(calls_name(s, f"{m}.seed", scope) for s in top))
        return cls(path, tree, module, aliases, functions, mutables, names, seeded)


def _assigned(stmt: ast.stmt) -> tuple[list[str], ast.AST | None]:
    if isinstance(stmt, ast.Assign):
        return [t.id for t in stmt.targets if isinstance(t, ast.Name)], stmt.value
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return [stmt.target.id], stmt.value
    return [], None


def _is_mutable(value: ast.AST, scope: Scope) -> bool:
    if isinstance(value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)):
        return True
    return isinstance(value, ast.Call) and scope.qualify(value.func) in MUTABLE_FACTORIES


def calls_name(tree: ast.AST, path: str, scope: Scope) -> bool:
    return any(isinstance(n, ast.Call) and n.args and scope.qualify(n.func) == path
               for n in ast.walk(tree))


class Sources:
    """Parsed project files, each parsed once per check."""

    def __init__(self, declared: DeclaredTopology) -> None:
        self.declared = declared
        self._cache: dict[Path, SourceModule | None] = {}

    def of(self, obj: object) -> SourceModule | None:
        try:
            file = inspect.getsourcefile(obj)  # type: ignore[arg-type]
        except TypeError:
            return None
        if not is_user_file(file, self.declared):
            return None
        path = Path(str(file)).resolve()
        if path not in self._cache:
            module = sys.modules.get(getattr(obj, "__module__", "") or "")
            if isinstance(obj, ModuleType):
                module = obj
            try:
                self._cache[path] = SourceModule.parse(path, module)
            except (OSError, SyntaxError, UnicodeDecodeError):
                self._cache[path] = None
        return self._cache[path]


@dataclass(frozen=True)
class Unit:
    """A function reached from an entry point, and how (``via``: method names)."""

    func: Func
    src: SourceModule
    via: tuple[str, ...]
    method: bool  # a method of the component (self is the component)


@dataclass
class ComponentCode:
    """A component's own code: its project classes, methods and attributes."""

    comp: DeclaredComponent
    classes: list[tuple[type, ast.ClassDef, SourceModule]] = field(default_factory=list)
    methods: dict[str, tuple[Func, SourceModule]] = field(default_factory=dict)
    self_attrs: dict[str, str] = field(default_factory=dict)  # attr -> origin path
    instance_attrs: set[str] = field(default_factory=set)
    class_attrs: dict[str, bool] = field(default_factory=dict)  # name -> mutable container

    @classmethod
    def build(cls, comp: DeclaredComponent, sources: Sources) -> ComponentCode:
        code = cls(comp)
        assert comp.cls is not None
        for klass in comp.cls.__mro__:
            src = sources.of(klass)
            node = _class_node(src.tree, klass.__qualname__) if src else None
            if src is None or node is None:
                continue
            code.classes.append((klass, node, src))
            for stmt in node.body:
                if isinstance(stmt, Func):
                    code.methods.setdefault(stmt.name, (stmt, src))
                targets, value = _assigned(stmt)
                for t in targets:
                    code.class_attrs.setdefault(
                        t, value is not None and _is_mutable(value, Scope(src.aliases, src.module)))
        for func, src in code.methods.values():
            scope = Scope({**src.aliases, **import_aliases(func)}, src.module)
            scope.learn_locals(func)
            for sub in ast.walk(func):
                for target in self_targets(sub):
                    code.instance_attrs.add(target.attr)
                    origin = scope.qualify(sub.value) if isinstance(sub, ast.Assign) else None
                    if origin:
                        code.self_attrs.setdefault(target.attr, origin)
        return code

    def reach(self, entries: tuple[str, ...] | None, sources: Sources) -> Iterator[Unit]:
        """Units reachable from ``entries`` (None: every method)."""
        names = list(self.methods) if entries is None else [e for e in entries if e in self.methods]
        todo = [Unit(*self.methods[n], (n,), True) for n in names]
        seen: set[tuple[Path, int]] = set()
        while todo:
            unit = todo.pop(0)
            key = (unit.src.path, unit.func.lineno)
            if key in seen:
                continue
            seen.add(key)
            yield unit
            todo.extend(self._callees(unit, sources))

    def _callees(self, unit: Unit, sources: Sources) -> Iterator[Unit]:
        for node in ast.walk(unit.func):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) \
                    and f.value.id in ("self", "cls") and f.attr in self.methods:
                yield Unit(*self.methods[f.attr], (*unit.via, f.attr), True)
            elif isinstance(f, ast.Name):
                if f.id in unit.src.functions:
                    yield Unit(unit.src.functions[f.id], unit.src, (*unit.via, f.id), False)
                elif unit.src.module is not None:
                    target = vars(unit.src.module).get(f.id)
                    if isinstance(target, FunctionType):
                        other = sources.of(target)
                        if other is not None and target.__name__ in other.functions:
                            yield Unit(other.functions[target.__name__], other,
                                       (*unit.via, f.id), False)


def _class_node(tree: ast.Module, qualname: str) -> ast.ClassDef | None:
    body: list[ast.stmt] = tree.body
    node: ast.ClassDef | None = None
    for part in qualname.split("."):
        node = next((s for s in body if isinstance(s, ast.ClassDef) and s.name == part), None)
        if node is None:
            return None
        body = node.body
    return node


def self_targets(node: ast.AST) -> list[ast.Attribute]:
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    return [t for t in targets if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
            and t.value.id == "self"]


# -- the rules ---------------------------------------------------------------------------
class Collector:
    def __init__(self, declared: DeclaredTopology) -> None:
        self.declared = declared
        self.findings: dict[tuple[str, str, int, str | None], Finding] = {}

    def add(self, rule: str, src: SourceModule | Path, line: int, comp: str | None,
            message: str, via: tuple[str, ...] = (), severity: Severity | None = None) -> None:
        path = src if isinstance(src, Path) else src.path
        file = self.declared.relative(path)
        key = (rule, file, line, comp)
        if key not in self.findings:
            self.findings[key] = Finding(rule, severity or RULES[rule].severity, file, line,
                                         comp, message, via)


