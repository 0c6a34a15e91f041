"""``run_check``: every family of rules over one topology, in one report.

Order: the declared topology (never refused), graph rules, static rules,
then, if asked and safe, the short local run. The run is skipped, with an
info finding saying why, when the loader would refuse the topology (Java /
shell components, custom groupings) or when bolts write to external systems:
the run executes the user's code, and a check must not write to
production systems.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from stormshift.check.dynamic import DEFAULT_MAX_TUPLES, DEFAULT_WALL_SECS, dynamic_findings
from stormshift.check.graph_rules import graph_findings, shadowed_findings
from stormshift.check.project import declare
from stormshift.check.report import CheckReport
from stormshift.check.rules import Finding, Severity
from stormshift.check.static import static_findings

__all__ = ["run_check"]

LOAD_BLOCKERS = frozenset({"java-spout", "java-bolt", "shell-component", "custom-grouping"})
WRITES = frozenset({"external-write", "idempotent-write"})


def run_check(
    path: str | os.PathLike[str],
    name: str | None = None,
    environment: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    dynamic: bool = True,
    *,
    max_tuples: int = DEFAULT_MAX_TUPLES,
    wall_secs: float = DEFAULT_WALL_SECS,
) -> CheckReport:
    """Check a streamparse project dir (or ``topologies/NAME.py``) for porting hazards.

    Raises ``TopologyError`` when the topology cannot be imported at all (the
    CLI's exit code 2); everything else is a finding in the report.
    """
    declared = declare(path, name, environment, overrides)
    findings: list[Finding] = (graph_findings(declared) + shadowed_findings(declared)
                               + static_findings(declared))
    ran = ""
    if dynamic:
        blockers = sorted({f.rule for f in findings if f.rule in LOAD_BLOCKERS})
        writers = sorted({str(f.component) for f in findings if f.rule in WRITES})
        if blockers:
            findings.append(_skipped(declared, "not run: stormshift cannot load this topology "
                                     f"until the {', '.join(blockers)} findings are fixed"))
        elif writers:
            findings.append(_skipped(declared, f"not run: {', '.join(writers)} write(s) to "
                                     "external systems and the run would write too"))
        else:
            from stormshift.topology.loader import load_topology

            graph = load_topology(path, name=name, environment=environment,
                                  overrides=dict(overrides) if overrides else None)
            short = dynamic_findings(graph, declared, max_tuples=max_tuples,
                                     wall_secs=wall_secs)
            findings += short.findings
            ran = short.ran
    return CheckReport(
        topology=declared.layout.topology_name, path=str(path), findings=findings,
        components=len(declared.components), ran=ran,
    )


def _skipped(declared: Any, message: str) -> Finding:
    return Finding("run-skipped", Severity.INFO,
                   declared.relative(declared.layout.topology_file), 0, None, message)
