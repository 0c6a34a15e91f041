"""The result of a check: findings, exit code, terminal and JSON forms.

Exit codes (also in ``stormshift check --help`` and the guide):
0 nothing, or info only; 1 warnings, no errors; 3 errors. 2 is left to the
CLI for a topology that cannot be loaded at all.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from stormshift.check.rules import RULES, Finding, Severity
from stormshift.display import cell, visible
from stormshift.display import console as safe_console

__all__ = ["EXIT_ERRORS", "EXIT_LOAD", "EXIT_OK", "EXIT_WARNINGS", "CheckReport"]

EXIT_OK, EXIT_WARNINGS, EXIT_LOAD, EXIT_ERRORS = 0, 1, 2, 3
_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


@dataclass
class CheckReport:
    """Findings of one ``stormshift check`` run, worst first."""

    topology: str
    path: str
    findings: list[Finding] = field(default_factory=list)
    components: int = 0
    ran: str = ""  # what the short local run did ("" = not run)

    def __post_init__(self) -> None:
        self.findings.sort(key=lambda f: (-f.severity.rank, f.rule, f.file, f.line))

    def counts(self) -> dict[str, int]:
        found = Counter(f.severity.value for f in self.findings)
        return {s.value: found.get(s.value, 0) for s in (Severity.ERROR, Severity.WARNING,
                                                        Severity.INFO)}

    def by_rule(self, rule: str) -> list[Finding]:
        return [f for f in self.findings if f.rule == rule]

    @property
    def exit_code(self) -> int:
        counts = self.counts()
        if counts["error"]:
            return EXIT_ERRORS
        return EXIT_WARNINGS if counts["warning"] else EXIT_OK

    def to_dict(self) -> dict[str, Any]:
        return {
            "topology": self.topology, "path": self.path, "components": self.components,
            "dynamic_run": self.ran or None, "counts": self.counts(),
            "exit_code": self.exit_code, "findings": [f.to_dict() for f in self.findings],
        }

    def summary_line(self) -> str:
        counts = self.counts()
        parts = [f"{n} {s}{'s' if n != 1 and s != 'info' else ''}" for s, n in counts.items()]
        run = f"; short run: {self.ran}" if self.ran else "; no short run"
        return f"{self.topology}: {', '.join(parts)} in {self.components} components{run}"

    def render(self) -> RenderableType:
        """Grouped by rule and severity: a header, its places; why / fix / guide once a rule."""
        blocks: list[RenderableType] = []
        # one block per rule and severity: the places under a WARNING header are exactly
        # the warnings the summary line counts (a rule's warnings under its ERROR header
        # read as errors: "3 warnings" for 2 shown)
        groups = list(dict.fromkeys((f.rule, f.severity) for f in self.findings))
        last = {rule_id: n for n, (rule_id, _) in enumerate(groups)}  # the notes once a rule
        for n, (rule_id, severity) in enumerate(groups):
            rule = RULES[rule_id]
            found = [f for f in self.by_rule(rule_id) if f.severity is severity]
            head = Text.assemble((f"{severity.value.upper():<8}", _STYLE[severity]),
                                 (rule_id, "bold"), f"  {rule.title}")
            blocks.append(head)
            for f in found:
                where = Text.assemble((visible(f.location), "bold"),
                                      (visible(f"  [{f.component}]") if f.component else "", "dim"))
                blocks.append(Padding(Group(where, Padding(cell(f.message), (0, 0, 0, 2), expand=False)),
                                      (0, 0, 0, 2), expand=False))
            if last[rule_id] != n:
                continue
            notes = Table.grid(padding=(0, 2, 0, 0))
            notes.add_column(style="dim")
            notes.add_column()
            for label, text in (("why", rule.why), ("fix", rule.fix), ("see", rule.guide)):
                notes.add_row(label, text)
            blocks.append(Padding(notes, (0, 0, 0, 2), expand=False))
            blocks.append(Text(""))
        if not self.findings:
            blocks.append(Text("nothing found that will not port as is", style="green"))
        blocks.append(cell(self.summary_line(), style="bold"))
        return Group(*blocks)

    def print(self, console: Console | None = None) -> None:
        console = console or safe_console()
        if console.width > 80:
            console = safe_console(file=console.file, width=80, force_terminal=console.is_terminal,
                                   no_color=console.no_color)
        console.print(self.render())
