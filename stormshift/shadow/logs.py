"""Component logs as a last resort: a topology whose bolts only log can still be shadowed.

A bolt with no outputs and no state of its own (it only calls ``self.logger``)
leaves nothing to compare, so its shadow would be ``NOTHING COMPARED``. Its log
lines are still what it does: both engines hand every captured line to
``engines.logs.forward_logs`` in the driver's process (the local engine as it
runs, the Spark driver from each task's counters record, a retried batch once),
so the shadow listens to the ``stormshift.component`` loggers during each run.

Lines are compared per *message template*: numbers become ``<n>`` and quoted
values ``<s>`` ("counted word 'cat' 3 times" -> "counted word <s> <n> times"),
so two sides that log the same things in another order, on other tasks, with
other timings, agree; each template is counted per component and per its first
quoted value (the key a line is about, "cat"; "" when none): a ``sum`` result
keyed on ``(template, value)`` whose count is the number of lines
(``compare.py``, classified like any stream, ``classify.py``).

Used only when nothing else is compared (no stream key, no state entry), and
named so in the verdict: a log line is weaker evidence than an output.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from stormshift.shadow.compare import StreamComparison, Tolerance, compare_stream
from stormshift.shadow.results import ResultMode, ResultSpec
from stormshift.topology.graph import TopologyGraph

__all__ = ["LOG_STREAM", "capture", "compare_logs", "template"]

ROOT = "stormshift.component"  # engines/logs.py: each component's logger is ROOT.<name>
LOG_STREAM = "log templates"
_QUOTED = re.compile(r"""'[^']*'|"[^"]*\"""")
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w])")
_FIELDS = ("template", "value")


def template(message: str) -> tuple[str, str]:
    """``(template, first quoted value)`` of a log message (module doc)."""
    quoted = _QUOTED.search(message)
    value = quoted.group(0)[1:-1] if quoted else ""
    return _NUMBER.sub("<n>", _QUOTED.sub("<s>", message)), value


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: dict[str, list[list[str]]] = {}

    def emit(self, record: logging.LogRecord) -> None:
        component = record.name[len(ROOT) + 1:]
        args = record.args if isinstance(record.args, tuple) else ()
        message = str(args[1]) if len(args) == 2 else record.getMessage()
        self.lines.setdefault(component, []).append(list(template(message)))


@contextmanager
def capture() -> Iterator[dict[str, list[list[str]]]]:
    """Every component log line forwarded while inside, as ``[template, value]`` rows by
    component (the component loggers let every level through meanwhile)."""
    logger = logging.getLogger(ROOT)
    handler, level = _Lines(), logger.level
    logger.addHandler(handler)
    if logger.getEffectiveLevel() > logging.DEBUG:
        logger.setLevel(logging.DEBUG)
    try:
        yield handler.lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def compare_logs(legacy: Mapping[str, Sequence[list[str]]], port: Mapping[str, Sequence[list[str]]],
                 tolerance: Tolerance, components: Sequence[str]) -> list[StreamComparison]:
    """One comparison per component of ``components`` that logged on either side, in
    that order: lines per ``(template, value)``."""
    out = []
    for name in components:
        if name not in legacy and name not in port:
            continue
        spec = ResultSpec(name, LOG_STREAM, _FIELDS, ResultMode.SUM, _FIELDS, (),
                          inferred=True, reason="component log lines (nothing else compared)")
        out.append(compare_stream(spec, legacy.get(name, []), port.get(name, []), tolerance))
    return out


def log_keys(result: Any) -> int:
    """The keys compared by log lines (0 when the logs were not used)."""
    return sum(s.keys for s in getattr(result, "logs", []))


def attach_logs(result: Any, graph: TopologyGraph, legacy: Mapping[str, Sequence[list[str]]],
                port: Mapping[str, Sequence[list[str]]],
                baseline: Mapping[str, Sequence[list[str]]] | None,
                findings: Any = None) -> None:
    """Set ``result.logs`` (classified) when nothing else was compared (module doc)."""
    from stormshift.shadow.classify import classify
    from stormshift.shadow.tap import is_tap

    if sum(s.keys for s in [*result.streams, *result.states]):
        return
    names = [c.name for c in graph.bolts if not is_tap(c.name)]
    result.logs = compare_logs(legacy, port, result.tolerance, names)
    base = None
    if baseline is not None:
        base = {s.label: s for s in compare_logs(baseline, port, result.tolerance, names)}
    classify(graph, result.logs, result.legacy, base, findings, port=result.port,
             base_run=result.baseline)
