"""The verdict of a shadow: one line a team can act on, and its exit code.

Pure functions over a finished comparison (a ``ShadowResult`` or a live
shadow's ``LiveResult``). The verdicts, first that applies wins:

- ``MOSTLY FAILED`` (exit 4): on both sides a bolt failed or dead-lettered
  more than half of its input (``FAILED_SHARE``): what was compared rests on
  the few tuples that got through, so no verdict on the port is possible;
- ``NOTHING COMPARED`` (exit 3): no leaf stream held a key, no bolt held
  state of its own and no component logged on either side: agreement would
  be vacuous (when only logs were compared, ``logs.py``, the verdict says so);
- ``PORT DIFFERS`` (exit 1): at least one key differs for a reason that only
  the port explains (``port`` class; ``live`` in a live shadow, which has no
  baseline to tell Storm's replays apart);
- ``SAFE TO SWITCH`` (exit 0): every key agrees, or differs only for reasons
  that are not the port's: Storm's replay double count or crash loss (a
  legacy task restart: an injected crash or the user's own code raising),
  another Storm failure effect, input the legacy did not finish (it gave up
  replaying a poison tuple, or stopped early), a nondeterministic component (``check``'s
  rule and file:line), rounding within the float tolerance, or a value that
  is not comparable. The line counts each of those classes.

Exit 2 (load, input or config errors, and a refusal: a component writing
outside the framework) is the CLI's, before anything runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stormshift.shadow.classify import CAUSE_CLASSES, LIVE_DIFFERENCE, PORT_DIFFERENCE

__all__ = [
    "EXIT_MOSTLY_FAILED", "EXIT_NOTHING_COMPARED", "EXIT_PORT_DIFFERS", "EXIT_SAFE",
    "FAILED_SHARE", "ClassCount", "Verdict", "classes", "failed_share", "judge",
]

EXIT_SAFE, EXIT_PORT_DIFFERS, EXIT_NOTHING_COMPARED, EXIT_MOSTLY_FAILED = 0, 1, 3, 4
#: a bolt that failed more than this share of its input "mostly failed"
FAILED_SHARE = 0.5
_BLAMED = (PORT_DIFFERENCE, LIVE_DIFFERENCE)
_WORDS = {
    "storm-replay": "Storm replay double count", "storm-crash-loss": "legacy crash loss",
    "storm-other": "another Storm failure effect",
    "legacy-unfinished": "input the legacy did not finish", "nondeterministic": "a nondeterministic "
    "component", "rounding": "rounding", "not-comparable": "values not comparable",
}


@dataclass(frozen=True)
class ClassCount:
    """How many divergent keys one class holds, with an example key."""

    id: str
    cause: str
    keys: int
    example: str  # "dog in count_bolt:default" (a leaf stream), "dog in count_bolt.counts" (state)
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"class": self.id, "cause": self.cause, "keys": self.keys,
                "example": self.example, "detail": self.detail}


@dataclass(frozen=True)
class Verdict:
    word: str
    exit_code: int
    reason: str

    @property
    def line(self) -> str:
        return f"{self.word}: {self.reason}"

    @property
    def safe(self) -> bool:
        return self.exit_code == EXIT_SAFE

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.word, "exit_code": self.exit_code, "reason": self.reason,
                "line": self.line}


def classes(result: Any) -> list[ClassCount]:
    """Divergent keys per class, in ``CAUSE_CLASSES`` order (an unknown cause last)."""
    found: dict[str, list[Any]] = {}
    for item in [*result.streams, *result.states, *getattr(result, "logs", [])]:
        for d in item.divergences:
            found.setdefault(d.cause, []).append(d)
    order = list(CAUSE_CLASSES)
    out = []
    for cause in sorted(found, key=lambda c: (order.index(c) if c in order else len(order), c)):
        ds = sorted(found[cause], key=lambda d: (d.stream, d.key))
        first = ds[0]
        details = sorted({d.detail for d in ds if d.detail})
        out.append(ClassCount(CAUSE_CLASSES.get(cause, cause), cause, len(ds),
                              f"{first.key} in {first.stream}", "; ".join(details)))
    return out


def failed_share(summary: Any) -> tuple[float, str]:
    """The largest share of its input a bolt failed or dead-lettered, and that bolt."""
    worst, name = 0.0, ""
    for stats in summary.components.values():
        if stats.kind != "bolt" or not stats.tuples_in:
            continue
        share = min(1.0, (stats.fails + stats.dead_lettered) / stats.tuples_in)
        if share > worst:
            worst, name = share, stats.name
    return worst, name


def judge(result: Any, counted: list[ClassCount] | None = None) -> Verdict:
    """The verdict of ``result`` (module docstring)."""
    counted = classes(result) if counted is None else counted
    if result.legacy is not None and result.port is not None:
        (left, lname), (right, rname) = failed_share(result.legacy), failed_share(result.port)
        if left > FAILED_SHARE and right > FAILED_SHARE:
            return Verdict("MOSTLY FAILED", EXIT_MOSTLY_FAILED, (
                f"{left:.0%} of {lname}'s input failed on the legacy side and {right:.0%} of "
                f"{rname}'s on the port; the comparison rests on too little to judge the port: "
                "fix the errors listed above and run again"))
    compared = sum(s.keys for s in [*result.streams, *result.states])
    by_logs = "" if compared else _by_logs(result)
    compared = compared or sum(s.keys for s in getattr(result, "logs", []))
    if compared == 0:
        return Verdict("NOTHING COMPARED", EXIT_NOTHING_COMPARED, (
            "no leaf stream emitted, no bolt holds state of its own and no component logged "
            "on either side, so agreement would prove nothing; fix: declare the outputs a bolt emits (or the "
            "shadow.results to compare), or give the shadow input that reaches them"))
    blamed = [c for c in counted if c.cause in _BLAMED]
    others = [c for c in counted if c.cause not in _BLAMED]
    explained = "; ".join(_explained(c, result) for c in others)
    if blamed:
        port = sum(c.keys for c in blamed)
        example = blamed[0]
        return Verdict("PORT DIFFERS", EXIT_PORT_DIFFERS, (
            f"{port} of {compared} compared keys differ in the port (e.g. {example.example})"
            + (f"; also {explained}" if explained else "") + by_logs))
    if not others:
        return Verdict("SAFE TO SWITCH", EXIT_SAFE,
                       f"0 port differences; all {compared} compared keys are equal{by_logs}")
    return Verdict("SAFE TO SWITCH", EXIT_SAFE,
                   f"0 port differences in {compared} compared keys; {explained}{by_logs}")


def _by_logs(result: Any) -> str:
    """The verdict's note when it rests on component log lines alone (``logs.py``)."""
    logs = getattr(result, "logs", [])
    if not any(s.keys for s in logs):
        return ""
    names = ", ".join(s.component for s in logs)
    return (f" (compared by component logs only, of {names}: nothing else was emitted or "
            "held, so log lines per message template are the evidence)")


def _explained(c: ClassCount, result: Any) -> str:
    what = _WORDS.get(c.id, c.cause)
    if c.id == "rounding":
        what += f" (within {result.tolerance.describe()})"
    elif c.detail:
        what += f" ({c.detail})"
    keys = f"{c.keys} keys differ" if c.keys != 1 else "1 key differs"
    return f"{keys} by {what}, e.g. {c.example}"
