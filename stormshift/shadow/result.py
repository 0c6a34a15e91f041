"""What a shadow run found: every comparison, the runs they came from, and the verdict.

Apart from ``run.py`` (which runs the sides and builds it) so that the reports, the verdict
and ``--json`` read one record without the machinery that made it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stormshift.engines.summary import RunSummary
from stormshift.shadow.compare import StreamComparison, Tolerance, count_causes
from stormshift.shadow.evidence import losses
from stormshift.shadow.final_state import StateComparison
from stormshift.shadow.tap import is_tap
from stormshift.shadow.verdict import Verdict, classes, judge

__all__ = ["ShadowResult"]


@dataclass
class ShadowResult:
    """The comparison of every leaf stream, and the runs it came from."""

    topology: str
    input: str
    streams: list[StreamComparison]
    legacy: RunSummary
    port: RunSummary
    baseline: RunSummary | None = None
    faults: list[str] = field(default_factory=list)
    injected: list[str] = field(default_factory=list)
    tolerance: Tolerance = field(default_factory=Tolerance)
    port_engine: str = "spark"
    warnings: list[str] = field(default_factory=list)
    states: list[StateComparison] = field(default_factory=list)
    #: component log lines per template, only when nothing else was compared (``logs.py``)
    logs: list[StreamComparison] = field(default_factory=list)

    @property
    def equal(self) -> bool:
        """Every leaf stream and final-state entry equal within the tolerance."""
        return all(s.equal for s in [*self.streams, *self.states, *self.logs])

    @property
    def verdict(self) -> Verdict:
        """The top line and exit code (``verdict.py``)."""
        return judge(self)

    @property
    def exit_code(self) -> int:
        """0 safe to switch, 1 the port differs, 3 nothing compared, 4 mostly failed."""
        return self.verdict.exit_code

    @property
    def sides(self) -> str:
        """What the reports call left and right."""
        return f"legacy = local engine (Storm semantics), port = {self.port_engine} engine"

    @property
    def context(self) -> str:
        """The input and the faults, as the reports' second line."""
        return f"input: {self.input}; legacy faults: {'; '.join(self.faults) or 'none'}"

    @property
    def losses(self) -> list[str]:
        """What the legacy side lost and the port set aside (``evidence.losses``): the
        reports' "legacy lost: ..." line."""
        return losses(self.legacy, self.port)

    def causes(self) -> dict[str, int]:
        """Divergences per cause, over all streams (sorted by cause)."""
        return count_causes([*self.streams, *self.states, *self.logs])

    def to_dict(self, examples: int = 50) -> dict[str, Any]:
        counted = classes(self)
        verdict = judge(self, counted)
        return {
            "topology": self.topology, "input": self.input, "equal": self.equal,
            "verdict": verdict.to_dict(), "exit_code": verdict.exit_code,
            "port_engine": self.port_engine,
            "tolerance": {"abs": self.tolerance.abs, "rel": self.tolerance.rel,
                          "text": self.tolerance.describe()},
            "faults": list(self.faults), "injected": list(self.injected),
            "classes": [c.to_dict() for c in counted],
            "causes": self.causes(), "warnings": list(self.warnings),
            "legacy_lost": self.losses,
            "streams": [s.to_dict(examples) for s in self.streams],
            "state": [s.to_dict(examples) for s in self.states],
            "logs": [s.to_dict(examples) for s in self.logs],
            "components": {
                name: {"legacy": _stats(self.legacy, name), "port": _stats(self.port, name)}
                for name in self.legacy.components if not is_tap(name)
            },
        }


def _stats(summary: RunSummary, name: str) -> dict[str, int]:
    s = summary.components.get(name)
    columns = ("tuples_in", "tuples_out", "acks", "fails", "replays", "duplicates", "restarts",
               "lost", "dead_lettered", "errors")
    return {c: getattr(s, c) for c in columns} if s is not None else {}
