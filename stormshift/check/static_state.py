"""Shared mutable state: module globals and class attributes a component changes.

Under Storm every streamparse task was its own process, so a module-level
``dict`` or a class-level ``Counter`` was private to the task. On Spark the
tasks of one Python worker share them, and only instance attributes are
snapshotted. A *mutation* is an in-place change (``X[k] = v``, ``del X[k]``,
``X.append(v)``, ``X.update(...)``...) or a rebinding (``global X; X += 1``,
``cls.X = ...``); reading a module constant is fine and never reported.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from stormshift.check.patterns import MUTATING_METHODS, Scope

if TYPE_CHECKING:
    from stormshift.check.code_model import ComponentCode, SourceModule

__all__ = ["mutations"]

_CONTAINERS = (dict, list, set, bytearray, deque)


def _local_names(func: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[set[str], set[str]]:
    """(names local to ``func``, names it declares ``global``)."""
    declared = {n for g in ast.walk(func) if isinstance(g, ast.Global) for n in g.names}
    args = func.args
    local = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    local |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            local.add(node.id)
    return local - declared, declared


def _root(expr: ast.AST) -> ast.AST:
    while isinstance(expr, ast.Subscript):
        expr = expr.value
    return expr


def _changed(node: ast.AST) -> Iterator[tuple[ast.AST, bool]]:
    """Expressions ``node`` changes: (container changed in place, or target rebound)."""
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    elif isinstance(node, ast.Delete):
        targets = node.targets
    for target in targets:
        if isinstance(target, ast.Subscript):
            yield _root(target.value), True
        else:
            yield target, False
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in MUTATING_METHODS:
        yield _root(node.func.value), True


def mutations(func: ast.FunctionDef | ast.AsyncFunctionDef, src: SourceModule,
              code: ComponentCode, scope: Scope) -> Iterator[tuple[str, int, str]]:
    """``(rule, line, what)`` for each change of shared state in ``func``."""
    local, declared_global = _local_names(func)
    class_names = {klass.__name__ for klass, _, _ in code.classes}
    for node in ast.walk(func):
        line = getattr(node, "lineno", 0)
        for expr, in_place in _changed(node):
            if isinstance(expr, ast.Name):
                what = _module_state(expr.id, in_place, src, local, declared_global)
                if what:
                    yield "shared-module-state", line, what
            elif isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
                what = _class_state(expr, in_place, code, class_names)
                if what:
                    yield "shared-class-state", line, what


def _module_state(name: str, in_place: bool, src: SourceModule, local: set[str],
                  declared_global: set[str]) -> str | None:
    if not in_place:
        if name in declared_global and name in src.names:
            return f"module-level {name!r} rebound (global)"
        return None
    if name in local:
        return None
    if name in src.mutables:
        return f"module-level {name!r} (defined at line {src.mutables[name]}) changed"
    imported: Any = vars(src.module).get(name) if src.module is not None else None
    if name in src.aliases and isinstance(imported, _CONTAINERS):
        return f"module-level {name!r} of {src.aliases[name].rpartition('.')[0]} changed"
    return None


def _class_state(expr: ast.Attribute, in_place: bool, code: ComponentCode,
                 class_names: set[str]) -> str | None:
    owner = expr.value.id if isinstance(expr.value, ast.Name) else ""
    attr = expr.attr
    if attr not in code.class_attrs:
        return None
    if owner == "self":
        if in_place and code.class_attrs[attr] and attr not in code.instance_attrs:
            return f"class attribute {attr!r} changed through self"
        return None
    if owner == "cls" or owner in class_names:
        return f"class attribute {attr!r} {'changed' if in_place else 'rebound'} through {owner}"
    return None
