"""What ``check``'s static analysis tells a shadow run, before anything runs.

Used as a library (both run in the driver): ``analyse`` reads the project's
sources the way ``stormshift check`` does (``check.project.declare`` and
``check.static.static_findings``, no short run) and keeps two things:

- *writers*: ``external-write`` / ``idempotent-write`` findings. A component
  that writes outside the framework would write on both sides of a shadow
  run into the same target; ``run.plan_shadow`` refuses it (``refusal``).
- *nondeterministic places*: ``wall-clock`` and ``unseeded-random`` findings
  (ids from ``uuid4`` included) mapped to what they reach: the component's
  attributes (``self.seen[w] = time.time()``) and the streams it emits them
  on. The mapping follows values through local names, ``self`` attributes
  (across the component's methods) and the return values of the project's
  functions; a value that leaves the component on a stream is not followed
  into the components that read it. ``classify`` gives divergences of those
  entries and streams their own class, with the rule and file:line.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stormshift.check.rules import Finding

__all__ = ["NONDETERMINISTIC_RULES", "WRITE_RULES", "ProjectFindings", "analyse", "merged",
           "refusal"]

NONDETERMINISTIC_RULES = frozenset({"wall-clock", "unseeded-random"})
WRITE_RULES = frozenset({"external-write", "idempotent-write"})
_MUTATORS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "appendleft",
                       "extendleft", "__setitem__"})


@dataclass(frozen=True)
class ProjectFindings:
    """``check``'s static findings of one project and where its nondeterminism lands."""

    findings: tuple[Finding, ...] = ()
    attributes: Mapping[tuple[str, str], tuple[Finding, ...]] = field(default_factory=dict)
    streams: Mapping[tuple[str, str], tuple[Finding, ...]] = field(default_factory=dict)

    @property
    def writers(self) -> list[Finding]:
        return [f for f in self.findings if f.rule in WRITE_RULES]

    def nondeterministic(self, component: str, name: str, *, stream: bool) -> tuple[Finding, ...]:
        """The findings behind a component's attribute (or stream) ``name``, if any."""
        return (self.streams if stream else self.attributes).get((component, name), ())


def analyse(path: str | os.PathLike[str], name: str | None = None,
            environment: str | None = None,
            overrides: Mapping[str, Any] | None = None) -> ProjectFindings:
    """The static findings of the project at ``path`` and what they reach (module docstring)."""
    from stormshift.check.code_model import ComponentCode, Sources
    from stormshift.check.project import declare
    from stormshift.check.static import static_findings

    declared = declare(path, name, environment, overrides)
    findings = static_findings(declared)
    sources = Sources(declared)
    attributes: dict[tuple[str, str], list[Finding]] = {}
    streams: dict[tuple[str, str], list[Finding]] = {}
    for comp in declared.components:
        own = [f for f in findings if f.component == comp.name and f.rule in NONDETERMINISTIC_RULES]
        if comp.cls is None or not own:
            continue
        units = list(ComponentCode.build(comp, sources).reach(None, sources))
        for finding in own:
            seed = (str((declared.root / finding.file).resolve()), finding.line)
            attrs, emitted = _reach(units, seed)
            for attr in attrs:
                attributes.setdefault((comp.name, attr), []).append(finding)
            for stream in emitted:
                streams.setdefault((comp.name, stream), []).append(finding)
    return ProjectFindings(tuple(findings), {k: tuple(v) for k, v in sorted(attributes.items())},
                           {k: tuple(v) for k, v in sorted(streams.items())})


def merged(a: ProjectFindings | None, b: ProjectFindings | None) -> ProjectFindings | None:
    """The legacy's and the port's findings together (either side's nondeterminism)."""
    if a is None or b is None:
        return a or b
    return ProjectFindings((*a.findings, *b.findings), {**b.attributes, **a.attributes},
                           {**b.streams, **a.streams})


def refusal(sides: Sequence[tuple[str, ProjectFindings]],
            redirected: Callable[[Finding], bool] = lambda f: False,
            kind: Callable[[Finding], str] = lambda f: "this target") -> str | None:
    """Why a shadow run must not start (a component writes outside the framework where the
    shadow cannot send it to a scratch target of its own: ``redirected``; ``kind`` names what
    it writes), or None."""
    lines = []
    for side, found in sides:
        kept = [f for f in found.writers if not redirected(f)]
        for f in sorted(kept, key=lambda f: (str(f.component), f.file, f.line)):
            lines.append(f"  {f.component} ({side}) at {f.location}: {f.message} [{f.rule}]; "
                         f"{kind(f)} cannot be redirected")
    if not lines:
        return None
    return ("shadow refused: a component writes outside the framework where the shadow cannot "
            "give each side a scratch target (Redis, files, requests / urllib HTTP and "
            "confluent_kafka it can), and a shadow run would "
            "run it on both sides against the same target (each write done twice, and the port "
            "blamed for it):\n" + "\n".join(lines) + "\nfix: give each side a scratch target "
            "through the config key the component reads it from (-o KEY=VALUE for the port, "
            "--legacy-option KEY=VALUE for the legacy side), then pass --allow-external-writes; "
            "or move the write into a stormshift state map or a sink "
            "(migrations_guide/state.md) and compare that port with --port")


def _reach(units: Sequence[Any], seed: tuple[str, int]) -> tuple[set[str], set[str]]:
    """Attributes and streams a value made at ``seed`` (file, line) reaches in ``units``."""
    attrs: set[str] = set()
    streams: set[str] = set()
    funcs: set[str] = set()
    for _ in range(6):
        before = (len(attrs), len(streams), len(funcs))
        for unit in units:
            at_seed = seed[1] if str(Path(unit.src.path).resolve()) == seed[0] else None
            if _walk(unit.func, at_seed, attrs, streams, funcs) and not unit.method:
                funcs.add(unit.func.name)
        if (len(attrs), len(streams), len(funcs)) == before:
            break
    return attrs, streams


def _walk(func: ast.AST, line: int | None, attrs: set[str], streams: set[str],
          funcs: set[str]) -> bool:
    """One pass over a function; True when it returns a tainted value."""
    names: set[str] = set()

    def tainted(node: ast.AST | None) -> bool:
        for n in ast.walk(node) if node is not None else ():
            if isinstance(n, ast.Call) and (n.lineno == line or isinstance(n.func, ast.Name)
                                            and n.func.id in funcs):
                return True
            if isinstance(n, ast.Name) and n.id in names:
                return True
            if _self_attr(n) in attrs:
                return True
        return False

    returns = False
    for node in ast.walk(func):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and tainted(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                _taint_target(target, names, attrs)
        elif isinstance(node, ast.For) and tainted(node.iter):
            _taint_target(node.target, names, attrs)
        elif isinstance(node, ast.Return) and tainted(node.value):
            returns = True
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            args = [*node.args, *(k.value for k in node.keywords if k.arg != "stream")]
            if not any(tainted(a) for a in args):
                continue
            owner = _self_attr(node.func.value)
            if owner and node.func.attr in _MUTATORS:
                attrs.add(owner)
            elif _self_attr(node.func) == "emit":
                streams.add(_stream_of(node))
    return returns


def _taint_target(target: ast.AST, names: set[str], attrs: set[str]) -> None:
    if isinstance(target, ast.Name):
        names.add(target.id)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            _taint_target(elt, names, attrs)
    else:
        node = target
        while isinstance(node, (ast.Subscript, ast.Attribute)) and _self_attr(node) is None:
            node = node.value
        owner = _self_attr(node)
        if owner:
            attrs.add(owner)


def _self_attr(node: ast.AST) -> str | None:
    """``X`` for ``self.X``, else None."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
            and node.value.id == "self":
        return node.attr
    return None


def _stream_of(call: ast.Call) -> str:
    for kw in call.keywords:
        if kw.arg == "stream" and isinstance(kw.value, ast.Constant):
            return str(kw.value.value)
    return "default"
