"""Static rules: read each component's own source with ``ast``.

For every Python component the project defines, the classes of its MRO that
live in the project (not streamparse/pystorm) are parsed, and code is
followed from entry points through ``self.method()`` calls and calls to the
project's own functions (in any of its modules):

- *processing* code (a bolt's ``process``/``process_batch``/``process_tick``
  and what they call) is where writes to external systems, wall-clock reads
  and unseeded randomness break replays;
- *all* code of a component (``initialize`` included) is where threads,
  shared mutable state and task-number assumptions matter;
- the class shape says the rest (``static_shape``): ``process_tick``, batching
  bolts, ``fail``; emits that cannot match the declared outputs (``static_emits``).

Findings point at the line of the call, in whichever project file it is.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from stormshift.check.code_model import (
    PROCESSING,
    Collector,
    ComponentCode,
    Sources,
    Unit,
    calls_name,
)
from stormshift.check.patterns import (
    Scope,
    classify_clock,
    classify_random,
    classify_redis_signature,
    classify_thread,
    classify_write,
    import_aliases,
)
from stormshift.check.project import DeclaredTopology
from stormshift.check.rules import Finding, Severity
from stormshift.check.static_emits import declared_streams, emit_findings
from stormshift.check.static_shape import shape_findings
from stormshift.check.static_state import mutations

__all__ = ["static_findings"]


def static_findings(declared: DeclaredTopology) -> list[Finding]:
    """Every static finding for the declared topology's Python components."""
    sources = Sources(declared)
    out = Collector(declared)
    for comp in declared.components:
        if comp.cls is None or comp.capabilities is None:
            continue
        code = ComponentCode.build(comp, sources)
        spout = comp.capabilities.spout
        if not spout:
            for unit in code.reach(PROCESSING, sources):
                _processing_rules(unit, code, out)
        streams = declared_streams(getattr(comp.spec, "outputs", None))
        for unit in code.reach(None, sources):
            _everywhere_rules(unit, code, out, bolt=not spout)
            emit_findings(unit, comp.name, streams, out, spout=spout)
        shape_findings(code, sources, out)
    return list(out.findings.values())


def _scope(unit: Unit, code: ComponentCode) -> Scope:
    scope = Scope({**unit.src.aliases, **import_aliases(unit.func)}, unit.src.module,
                  code.self_attrs if unit.method else {})
    scope.learn_locals(unit.func)
    return scope


def _calls_in(unit: Unit) -> Iterator[ast.Call]:
    return (n for n in ast.walk(unit.func) if isinstance(n, ast.Call))


def _where(unit: Unit) -> str:
    return " -> ".join(f"{v}()" for v in unit.via)


def _processing_rules(unit: Unit, code: ComponentCode, out: Collector) -> None:
    scope, name = _scope(unit, code), code.comp.name
    seeded = unit.src.seeded | {m for m in ("random", "numpy.random") if any(
        calls_name(f, f"{m}.seed", _scope(Unit(f, s, (), True), code))
        for f, s in code.methods.values())}
    for call in _calls_in(unit):
        path = scope.qualify(call.func)
        if not path:
            continue
        rule = classify_write(path, call)
        local_file = path.partition(":")[0] in ("open", "io.open", "codecs.open") and isinstance(
            call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
        if rule and not local_file:
            out.add(rule, unit.src, call.lineno, name, f"{path} in {_where(unit)}", unit.via)
        if classify_redis_signature(path, call):
            out.add("redis-py-signature", unit.src, call.lineno, name,
                    f"{path}() with two arguments in {_where(unit)}", unit.via)
        if classify_clock(path, call):
            out.add("wall-clock", unit.src, call.lineno, name, f"{path}() in {_where(unit)}",
                    unit.via)
        drawn = classify_random(path, call, frozenset(seeded))
        if drawn == "unseeded":
            out.add("unseeded-random", unit.src, call.lineno, name,
                    f"{path}() in {_where(unit)}", unit.via)
        elif drawn == "seeded":
            out.add("unseeded-random", unit.src, call.lineno, name,
                    f"{path}() in {_where(unit)}: seeded, but the module's generator is shared "
                    "by the worker's tasks and not snapshotted; prefer self.rng = "
                    "random.Random(seed)", unit.via, Severity.INFO)


def _everywhere_rules(unit: Unit, code: ComponentCode, out: Collector, *, bolt: bool) -> None:
    scope, name = _scope(unit, code), code.comp.name
    for call in _calls_in(unit):
        path = scope.qualify(call.func)
        kind = classify_thread(path) if path else None
        if kind:
            out.add(kind, unit.src, call.lineno, name, f"{path} in {_where(unit)}", unit.via)
        if bolt and path and path in ("random.Random", "numpy.random.default_rng") \
                and classify_random(path, call, frozenset()) == "unseeded":
            out.add("unseeded-random", unit.src, call.lineno, name,
                    f"{path}() without a seed in {_where(unit)}", unit.via)
        _emit_rules(call, unit, name, out)
    for rule, line, what in mutations(unit.func, unit.src, code, scope):
        out.add(rule, unit.src, line, name, f"{what} in {_where(unit)}", unit.via)


def _emit_rules(call: ast.Call, unit: Unit, name: str, out: Collector) -> None:
    f = call.func
    if not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
            and f.value.id == "self"):
        return
    if f.attr == "emit_direct":
        out.add("direct-emit", unit.src, call.lineno, name, f"self.emit_direct() in {_where(unit)}")
    if f.attr != "emit":
        return
    for kw in call.keywords:
        value = kw.value
        if kw.arg == "need_task_ids" and not (isinstance(value, ast.Constant) and not value.value):
            out.add("task-ids", unit.src, call.lineno, name,
                    f"emit(need_task_ids=...) in {_where(unit)}", unit.via)
        if kw.arg == "direct_task" and not (isinstance(value, ast.Constant) and value.value is None):
            constant = isinstance(value, ast.Constant)
            out.add("direct-emit", unit.src, call.lineno, name,
                    f"emit(direct_task={ast.unparse(value)}) in {_where(unit)}"
                    + ("" if constant else ": computed, check it comes from the context"),
                    unit.via, Severity.WARNING if constant else Severity.INFO)
