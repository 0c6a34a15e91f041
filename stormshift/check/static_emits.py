"""Emits that fail whatever the engine: the declared outputs against ``self.emit`` calls.

A component's streams come from its spec (``outputs`` of the class or a base
class, strings for the default stream or streamparse ``Stream`` objects).
An emit is checked only where the source says what it sends: a literal
list/tuple for the arity, a literal ``stream=`` name (or none: ``default``).
An emit of a variable, or to a stream held in a variable, is never flagged,
except from a component with no outputs at all, where every emit fails.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence

from stormshift.check.code_model import Collector, Unit

__all__ = ["declared_streams", "emit_findings"]

_UNKNOWN = object()  # a stream= the source does not name literally


def declared_streams(spec_outputs: Mapping[str, object] | None) -> dict[str, list[str]]:
    """``{stream: fields}`` from a streamparse spec's ``outputs`` (``StreamInfo`` values)."""
    return {str(name): list(getattr(info, "output_fields", None) or [])
            for name, info in (spec_outputs or {}).items()}


def emit_findings(unit: Unit, component: str, streams: Mapping[str, Sequence[str]],
                  out: Collector, *, spout: bool) -> None:
    """ERROR findings for the emits of ``unit`` that can never succeed (module doc)."""
    if not unit.method:  # a helper function's ``self`` is not the component
        return
    for call in (n for n in ast.walk(unit.func) if isinstance(n, ast.Call)):
        f = call.func
        if not (isinstance(f, ast.Attribute) and f.attr == "emit"
                and isinstance(f.value, ast.Name) and f.value.id == "self" and call.args):
            continue
        finding = _check(call, streams, spout)
        if finding is not None:
            rule, message = finding
            out.add(rule, unit.src, call.lineno, component, message, unit.via)


def _check(call: ast.Call, streams: Mapping[str, Sequence[str]],
           spout: bool) -> tuple[str, str] | None:
    shown = _shown(call)
    if not streams:
        return ("emit-without-outputs",
                f"{shown}: the component declares no outputs (outputs = [] or none)")
    stream = _stream(call, spout)
    if stream is _UNKNOWN:
        return None
    name = str(stream)
    if name not in streams:
        declared = ", ".join(repr(s) for s in sorted(streams))
        return ("emit-undeclared-stream",
                f"{shown}: stream {name!r} is not declared (declared: {declared})")
    values = call.args[0]
    if not isinstance(values, (ast.List, ast.Tuple)) or any(
            isinstance(e, ast.Starred) for e in values.elts):
        return None
    fields = list(streams[name])
    if len(values.elts) == len(fields):
        return None
    message = (f"{shown} sends {len(values.elts)} value(s); stream {name!r} declares "
               f"{len(fields)} field(s) {fields}")
    return "emit-arity", message


def _stream(call: ast.Call, spout: bool) -> object:
    """The literal stream name of an emit (``default`` when none), or ``_UNKNOWN``."""
    node: ast.expr | None = next((k.value for k in call.keywords if k.arg == "stream"), None)
    position = 2 if spout else 1  # Spout.emit(tup, tup_id, stream), Bolt.emit(tup, stream)
    if node is None and len(call.args) > position:
        node = call.args[position]
    if any(k.arg is None for k in call.keywords) or any(
            isinstance(a, ast.Starred) for a in call.args):
        return _UNKNOWN  # **kwargs / *args may carry the stream
    if node is None or isinstance(node, ast.Constant) and node.value is None:
        return "default"
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return _UNKNOWN


def _shown(call: ast.Call) -> str:
    text = ast.unparse(call)
    return text if len(text) <= 80 else text[:77] + "..."
