"""``--legacy-faults SPEC``: Storm failures injected into the legacy (local engine) side.

SPEC is a comma-separated list of:

- ``fail:BOLT@N[+N...]`` -- BOLT processes its N-th data tuple (1-based, in
  delivery order, over all its tasks), then fails it: the spout replays the
  tuple tree and every bolt on the way counts it again (a double count);
  ``N-M`` is a range;
- ``fail-before:BOLT@N...`` -- the same tuple is failed before BOLT sees it;
- ``crash:BOLT[TASK]@N`` -- task TASK (default 0) of BOLT is killed when it is
  about to execute its N-th tuple: its in-memory state and queue are lost, the
  trees time out after ``topology.message.timeout.secs`` (Storm's timeouts),
  and the spout replays them.

The faults are the local engine's ``FailTuples`` / ``CrashTask``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from stormshift.engines.local import CrashTask, FailTuples
from stormshift.errors import OptionError

__all__ = ["describe_fault", "describe_faults", "parse_faults"]

_ITEM = re.compile(r"^(?P<kind>fail|fail-before|crash):(?P<comp>[^@\[\]]+)(?:\[(?P<task>\d+)\])?@(?P<at>[0-9+\-]+)$")
_EXAMPLE = "fail:count_bolt@3+10-12,crash:count_bolt[1]@50"


def parse_faults(text: str | None) -> tuple[FailTuples | CrashTask, ...]:
    """The faults of SPEC (empty for None / "")."""
    if not text:
        return ()
    faults: list[FailTuples | CrashTask] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        match = _ITEM.match(item)
        if match is None:
            raise OptionError(
                f"--legacy-faults item {item!r} is not understood; fix: use fail:BOLT@N, "
                f"fail-before:BOLT@N or crash:BOLT[TASK]@N (e.g. {_EXAMPLE})"
            )
        component, at = match["comp"], match["at"]
        if match["kind"] == "crash":
            if not at.isdigit():
                raise OptionError(f"--legacy-faults {item!r}: a crash takes one tuple number")
            faults.append(CrashTask(component, int(match["task"] or 0), int(at)))
            continue
        if match["task"] is not None:
            raise OptionError(f"--legacy-faults {item!r}: fail counts tuples over all tasks; "
                              "fix: drop the [TASK]")
        faults.append(FailTuples(component, frozenset(_indexes(at, item)),
                                 before=match["kind"] == "fail-before"))
    return tuple(faults)


def _indexes(text: str, item: str) -> set[int]:
    out: set[int] = set()
    for part in text.split("+"):
        low, _, high = part.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            raise OptionError(f"--legacy-faults {item!r}: {part!r} is not N or N-M")
        first, last = int(low), int(high or low)
        if first < 1 or last < first:
            raise OptionError(f"--legacy-faults {item!r}: {part!r} must be 1-based and N <= M")
        out.update(range(first, last + 1))
    return out


def describe_fault(fault: CrashTask | FailTuples) -> str:
    """A fault as the reports name it (``crash count_bolt[0] at its tuple 5``)."""
    if isinstance(fault, CrashTask):
        return f"crash {fault.component}[{fault.task_index}] at its tuple {fault.at_tuple}"
    when = "before" if fault.before else "after"
    return f"fail {fault.component} tuples {_ranges(sorted(fault.indexes))} ({when} processing)"


def _ranges(numbers: list[int]) -> str:
    """``[1, 2, 3, 7]`` -> ``"1-3, 7"``."""
    parts: list[str] = []
    for n in numbers:
        if parts and n == int(parts[-1].rpartition("-")[2]) + 1:
            parts[-1] = f"{parts[-1].partition('-')[0]}-{n}"
        else:
            parts.append(str(n))
    return ", ".join(parts)


def describe_faults(faults: Sequence[CrashTask | FailTuples]) -> str:
    return "; ".join(describe_fault(f) for f in faults)
