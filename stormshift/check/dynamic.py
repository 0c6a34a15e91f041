"""Dynamic rules: a short run on the local engine, then a snapshot attempt.

What only running shows: which attributes a bolt really holds after it
processed tuples, and whether stormshift could snapshot them. The run is
bounded (``max_tuples`` spout tuples, a simulated clock, a wall-clock
budget) and happens in this process on the local engine: no Spark, no
Redis. Each bolt task's attributes are then tried as the engines' snapshots
take them (``state/component/attributes.py``: the one definition of which
attributes are state); an attribute left out only because it cannot be
pickled is reported where the class assigns it.

The budget never ends ``check``: the run goes in a worker thread; past the
budget the engine is asked to stop (honoured between two calls into user
code, then it drains), and a call that still has not returned after a grace
period (a spout blocked in ``next_tuple``) is left behind in its daemon
thread. Either way the report says what the run saw (``run-budget``).
"""

from __future__ import annotations

import ast
import os
import re
import sys
import threading
from dataclasses import dataclass
from typing import Any

from stormshift.check.code_model import ComponentCode, Sources, self_targets
from stormshift.check.project import DeclaredTopology
from stormshift.check.rules import Finding, Severity
from stormshift.state.component import Unpicklable, unpicklable
from stormshift.topology.graph import TopologyGraph

__all__ = ["DEFAULT_MAX_TUPLES", "DEFAULT_WALL_SECS", "ShortRun", "dynamic_findings"]

DEFAULT_MAX_TUPLES = 300
DEFAULT_WALL_SECS = 20.0
GRACE_SECS = 5.0  # after the stop request: room to drain before the run is left behind
_LOCATION = re.compile(r"^(?P<file>.+?):(?P<line>\d+)(?: in .*)?$")


@dataclass
class ShortRun:
    """What the short run found, and the report's ``ran`` line (what it did)."""

    findings: list[Finding]
    ran: str


def dynamic_findings(
    graph: TopologyGraph,
    declared: DeclaredTopology,
    *,
    max_tuples: int = DEFAULT_MAX_TUPLES,
    wall_secs: float = DEFAULT_WALL_SECS,
    grace_secs: float = GRACE_SECS,
) -> ShortRun:
    """Run ``graph`` briefly and report what stormshift could not snapshot (module doc)."""
    from stormshift.engines.local import LocalEngine, SimClock

    try:
        engine = LocalEngine(graph, clock=SimClock(), seed=0, final_tick=True,
                             keep_outputs=False)
    except Exception as exc:  # noqa: BLE001 - user code may raise anything
        return ShortRun([_failed(declared, exc)], "")
    cwd = os.getcwd()
    outcome, worker, over = _run_in_worker(engine, max_tuples, wall_secs, grace_secs)
    if "error" in outcome:
        return ShortRun([_failed(declared, outcome["error"])], "")
    summary = outcome.get("summary", engine.summary)
    seen, budget = summary.spout_tuples, f"{wall_secs:g} s (budget)"
    findings = _run_errors(summary, declared)
    if worker.is_alive():
        os.chdir(cwd)  # the run left behind is still inside the engine's working_dir()
        stuck = _stuck_at(worker, declared)
        ran = f"{seen:,} spout tuples in {budget}, then left behind"
        findings.append(_budget(declared, stuck, f"short run: {ran}: a call into the project's "
                                f"code did not return ({stuck[2] or 'place unknown'}); what ran "
                                "before it is reported, attributes were not pickled"))
        return ShortRun(findings, ran)  # instances still in use: pickling them could race
    if over:
        ran = f"{seen:,} spout tuples in {budget}"
        findings.append(_budget(declared, None, f"short run: {ran}; it stopped before "
                                f"{max_tuples:,} spout tuples (a spout that sleeps or waits "
                                "gets fewer through)"))
    else:
        ran = f"{seen:,} spout tuples on the local engine"
    return ShortRun(findings + _snapshot_findings(graph, engine, declared), ran)


def _run_in_worker(engine: Any, max_tuples: int, wall_secs: float,
                   grace_secs: float) -> tuple[dict[str, Any], threading.Thread, bool]:
    """``engine.run`` in a daemon thread: past ``wall_secs`` a stop request, then at most
    ``grace_secs`` more. Returns what it left (``summary`` or ``error``), the thread, and
    whether the budget was reached. Ctrl-C stops the run and propagates (exit 130)."""
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["summary"] = engine.run(max_tuples=max_tuples)
        except Exception as exc:  # noqa: BLE001 - user code may raise anything
            outcome["error"] = exc

    worker = threading.Thread(target=work, name="stormshift-check-run", daemon=True)
    worker.start()
    try:
        worker.join(wall_secs)
        over = worker.is_alive()
        if over:
            engine.request_stop(f"check budget of {wall_secs:g}s reached")
            worker.join(grace_secs)
    except KeyboardInterrupt:  # the user's Ctrl-C: stop the run, then let the CLI say 130
        engine.request_stop("interrupted")
        raise
    return outcome, worker, over


def _snapshot_findings(graph: TopologyGraph, engine: Any,
                       declared: DeclaredTopology) -> list[Finding]:
    """Each bolt's attributes the Spark engine could not snapshot, where they are set."""
    findings: list[Finding] = []
    sources = Sources(declared)
    by_name = {c.name: c for c in declared.components}
    for comp in graph.bolts:
        bad: dict[str, Unpicklable] = {}
        for instance in engine.instances(comp.name):
            for item in unpicklable(instance):
                bad.setdefault(item.attr, item)
        if bad and comp.name in by_name and by_name[comp.name].cls is not None:
            code = ComponentCode.build(by_name[comp.name], sources)
            findings += [_finding(item, code, declared) for item in bad.values()]
    return findings


def _stuck_at(worker: threading.Thread, declared: DeclaredTopology) -> tuple[str, int, str]:
    """``(file, line, "file:line in function")`` of the deepest project frame of ``worker``."""
    frame = sys._current_frames().get(worker.ident or -1)
    root = str(declared.root.resolve())
    found: tuple[str, int, str] = ("", 0, "")
    while frame is not None:
        path = frame.f_code.co_filename
        if path.startswith(root) and "site-packages" not in path:
            file = declared.relative(path)
            found = (file, frame.f_lineno, f"{file}:{frame.f_lineno} in {frame.f_code.co_name}")
            break
        frame = frame.f_back
    return found


def _finding(item: Unpicklable, code: ComponentCode, declared: DeclaredTopology) -> Finding:
    """Warning if the attribute holds a position or changes after initialize(), else info."""
    sites: list[tuple[str, str, int]] = []  # (method, file, line)
    for method, (func, src) in code.methods.items():
        for node in ast.walk(func):
            sites += [(method, declared.relative(src.path), t.lineno)
                      for t in self_targets(node) if t.attr == item.attr]
    changed_later = any(method != "initialize" for method, _, _ in sites)
    # where the value is made: outside initialize() if it is re-assigned there
    sites.sort(key=lambda s: ((s[0] == "initialize") == changed_later, s[2]))
    if sites:
        file, line = sites[0][1], sites[0][2]
    elif code.classes:
        _, node, src = code.classes[0]
        file, line = declared.relative(src.path), node.lineno
    else:
        file, line = declared.relative(declared.layout.topology_file), code.comp.line
    what = f"self.{item.attr} ({item.type_name}) cannot be pickled: {item.error}"
    if item.holds_position or changed_later:
        why = "its position is lost" if item.holds_position else "it is set outside initialize()"
        return Finding("unpicklable-attribute", Severity.WARNING, file, line, code.comp.name,
                       f"{what}; {why}")
    return Finding("unpicklable-client", Severity.INFO, file, line, code.comp.name, what)


def _run_errors(summary: Any, declared: DeclaredTopology) -> list[Finding]:
    out = []
    for kind in summary.problems.kinds():
        match = _LOCATION.match(kind.location or "")
        file = match["file"] if match else declared.relative(declared.layout.topology_file)
        line = int(match["line"]) if match else 0
        out.append(Finding("run-error", Severity.WARNING, file, line, kind.component,
                           kind.headline(width=100)))
    return out


def _budget(declared: DeclaredTopology, where: tuple[str, int, str] | None,
            message: str) -> Finding:
    file, line = (where[0], where[1]) if where and where[0] else (
        declared.relative(declared.layout.topology_file), 0)
    return Finding("run-budget", Severity.INFO, file, line, None, message)


def _failed(declared: DeclaredTopology, exc: BaseException) -> Finding:
    return _skipped(declared, f"the short local run failed: {type(exc).__name__}: {exc}")


def _skipped(declared: DeclaredTopology, message: str) -> Finding:
    return Finding("run-skipped", Severity.INFO,
                   declared.relative(declared.layout.topology_file), 0, None, message)
