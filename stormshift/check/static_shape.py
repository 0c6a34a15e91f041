"""Rules on a component's shape: what it overrides and what it derives from.

Ticks (``process_tick``, batching bolts) come once per micro-batch on Spark,
and ``fail()`` is never called there, so a spout that replays from ``fail``
(re-emitting, or queueing the id for ``next_tuple``) behaves differently.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from stormshift.check.patterns import MUTATING_METHODS
from stormshift.check.rules import Severity
from stormshift.topology.capabilities import TICK_KEY, Batching

if TYPE_CHECKING:
    from stormshift.check.code_model import Collector, ComponentCode, Sources

__all__ = ["shape_findings"]


def shape_findings(code: ComponentCode, sources: Sources, out: Collector) -> None:
    comp, caps = code.comp, code.comp.capabilities
    if caps is None or comp.cls is None or not code.classes:
        return
    name = comp.name
    _, first_node, first_src = code.classes[0]
    tickless = caps.batching is Batching.TICKLESS
    if "process_tick" in code.methods and not caps.spout:
        func, src = code.methods["process_tick"]
        secs = comp.config.get(TICK_KEY)
        ticks = secs is not None or tickless
        out.add("tick-timing", src, func.lineno, name,
                f"process_tick() with {TICK_KEY}={secs}" if secs is not None else
                "process_tick() (ticks only if topology.tick.tuple.freq.secs is set)",
                severity=None if ticks else Severity.INFO)
    if caps.batching is not Batching.NONE:
        base = "TicklessBatchingBolt" if tickless else "BatchingBolt"
        out.add("batching-bolt", first_src, first_node.lineno, name,
                f"{comp.cls.__name__} is a {base}")
    if caps.spout and "fail" in code.methods:
        func, src = code.methods["fail"]
        fail_nodes = [n for u in code.reach(("fail",), sources) for n in ast.walk(u.func)]
        emits = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                    and n.func.attr == "emit" for n in fail_nodes)
        queued = _changed_attrs(fail_nodes) & {
            n.attr for u in code.reach(("next_tuple",), sources) for n in ast.walk(u.func)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
            and n.value.id == "self"}
        message = ("fail() re-emits the failed tuple" if emits else
                   f"fail() queues it for next_tuple() (self.{min(queued)})" if queued
                   else "fail() overridden")
        out.add("fail-replay" if emits or queued else "spout-fail", src, func.lineno, name,
                message)
    elif caps.reliable:
        out.add("fail-replay", first_src, first_node.lineno, name,
                f"{comp.cls.__name__} is a ReliableSpout (re-emits from fail())")


def _changed_attrs(nodes: list[ast.AST]) -> set[str]:
    """Names of ``self.X`` that ``nodes`` assign or change in place."""
    from stormshift.check.code_model import self_targets

    changed = {t.attr for n in nodes for t in self_targets(n)}
    for n in nodes:
        target = None
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                and n.func.attr in MUTATING_METHODS:
            target = n.func.value
        elif isinstance(n, (ast.Assign, ast.AugAssign, ast.Delete)):
            subs = n.targets if isinstance(n, (ast.Assign, ast.Delete)) else [n.target]
            target = next((t.value for t in subs if isinstance(t, ast.Subscript)), None)
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                and target.value.id == "self":
            changed.add(target.attr)
    return changed
