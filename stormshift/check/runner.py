"""``run_check``: every family of rules over one topology, in one report.

Order: the declared topology (never refused; packages that are not installed
stood in for and reported as ``missing-package``), graph rules, static rules,
then, if asked and safe, the short local run. The run is skipped, with an
info finding saying why, when a package is missing, when the loader would
refuse the topology (Java / shell components, custom groupings) or when bolts
write to external systems: the run executes the user's code, and a check must
not write to production systems.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stormshift.check.dynamic import (
    DEFAULT_MAX_TUPLES,
    DEFAULT_WALL_SECS,
    GRACE_SECS,
    dynamic_findings,
)
from stormshift.check.graph_rules import graph_findings, shadowed_findings
from stormshift.check.project import DeclaredTopology, declare
from stormshift.check.report import CheckReport
from stormshift.check.rules import RULES, Finding, Severity
from stormshift.check.stand_ins import StandIns
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
    grace_secs: float = GRACE_SECS,
) -> CheckReport:
    """Check a streamparse project dir (or ``topologies/NAME.py``) for porting hazards.

    Raises ``TopologyError`` when the topology cannot be imported at all (the
    CLI's exit code 2); everything else is a finding in the report. ``grace_secs``: how
    long a call still running at the budget may take before the short run is left behind.
    """
    with StandIns() as stand_ins:  # the static rules read the classes built on stand-ins
        declared = declare(path, name, environment, overrides, stand_ins=stand_ins)
        findings: list[Finding] = (missing_findings(declared) + graph_findings(declared)
                                   + shadowed_findings(declared) + static_findings(declared))
    ran = ""
    if dynamic:
        blockers = sorted({f.rule for f in findings if f.rule in LOAD_BLOCKERS})
        writers = sorted({str(f.component) for f in findings if f.rule in WRITES})
        if declared.missing:
            packages = ", ".join(sorted({m.package for m in declared.missing}))
            findings.append(_skipped(declared, f"not run: the project's imports of {packages} "
                                     "fail here (see missing-package)"))
        elif blockers:
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
                                     wall_secs=wall_secs, grace_secs=grace_secs)
            findings += short.findings
            ran = short.ran
    return CheckReport(
        topology=declared.layout.topology_name, path=str(path), findings=findings,
        components=len(declared.components), ran=ran,
    )


def missing_findings(declared: DeclaredTopology) -> list[Finding]:
    """One finding per package the project imports that this environment lacks, at the
    import statement (``declare`` stood in for it to read the rest)."""
    out = []
    for err in declared.missing:
        file = declared.relative(err.file) if err.file else declared.relative(
            declared.layout.topology_file)
        owner = next((c.name for c in declared.components if c.cls is not None
                      and _defined_in(c.cls, err.file)), None)
        out.append(Finding("missing-package", RULES["missing-package"].severity, file, err.line,
                           owner, f"{err.summary}; fix: {err.fix}"))
    return out


def _defined_in(cls: type, file: str | None) -> bool:
    try:
        source = inspect.getsourcefile(cls)
    except TypeError:
        return False
    return bool(file and source) and Path(str(source)).resolve() == Path(str(file)).resolve()


def _skipped(declared: Any, message: str) -> Finding:
    return Finding("run-skipped", Severity.INFO,
                   declared.relative(declared.layout.topology_file), 0, None, message)
