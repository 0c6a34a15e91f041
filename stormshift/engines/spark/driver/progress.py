"""The live progress line printed after each batch (pure formatting)."""

from __future__ import annotations

import re
from typing import Any

from stormshift.errors import ComponentFailure, InfraError, RunFailedError, StormshiftError

__all__ = ["first_seen_errors", "format_progress", "query_failure", "stop_reason_from"]


def format_progress(result: Any, layout: Any) -> str:
    """``batch 3 txid 3 committed | 10,000 spout tuples 41,000 ev/s 0.24 s | split 10000>50000 ...``"""
    secs = result.duration_ms / 1000
    rate = result.spout_tuples / secs if secs > 0 else 0.0
    parts = [f"batch {result.batch_id} txid {result.txid} {result.status.value}",
             f"{result.spout_tuples:,} spout tuples {rate:,.0f} ev/s {secs:.2f} s"]
    flows = []
    for comp in layout.graph:
        c = result.counters.get(comp.name)
        if not c:
            continue
        text = f"{comp.name} {c['tuples_in']}>{c['tuples_out']}"
        if c.get("dead_lettered"):
            text += f" dlq {c['dead_lettered']}"
        flows.append(text)
    if flows:
        parts.append(" ".join(flows))
    return " | ".join(parts)


def first_seen_errors(result: Any, reported: set[tuple[str, str, str, str]],
                      components: list[str] | None = None) -> list[str]:
    """A line for each error kind seen for the first time in this batch (``reported``
    remembers them), saying when every tuple a component got failed: a run whose first
    tuples all fail says so after its first batch, not at the end. ``result`` is a batch
    result or the run summary (``components``: only theirs)."""
    lines = []
    kinds = [k for c in components for k in result.problems.kinds(c)] if components is not None \
        else result.problems.kinds()
    counters = getattr(result, "counters", {})
    for kind in kinds:
        key = (kind.component, kind.type, kind.message, kind.location)
        if key in reported:
            continue
        reported.add(key)
        c = counters.get(kind.component, {})
        got, failed = c.get("tuples_in", 0), c.get("dead_lettered", 0)
        every = f" (all {got:,} tuples it got in this batch failed)" if got and failed >= got else ""
        lines.append(f"error in {kind.component}{every}: {kind.headline()}")
    return lines


_RAISED = re.compile(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception|Failure)): .+")
_WRAPPERS = ("py4j.", "java.", "org.apache.", "scala.")


def stop_reason_from(exc: Any) -> str:
    """The line of a StreamingQueryException that names the user's error.

    Spark wraps a Python error raised in the driver's batch function in a Java
    exception around a Python traceback: the line wanted is the traceback's
    last ``SomeError: message`` that is not a Java or Py4J wrapper.
    """
    text = str(exc)
    raised = [m.group(0).strip() for m in map(_RAISED.match, text.splitlines()) if m]
    ours = [line for line in raised if "ComponentFailure" in line or "Stormshift" in line
            or "InfraError" in line
            or "StateError" in line or "FencedError" in line or "KeyedFusionError" in line]
    if ours:
        return ours[-1]
    plain = [line for line in raised if not line.startswith(_WRAPPERS)]
    if plain:
        return plain[-1]
    return text.splitlines()[0] if text else repr(exc)


def query_failure(reason: str, before_first_batch: bool, details: str = "") -> StormshiftError:
    """The error a failed query ends the run with, ``reason`` from ``stop_reason_from``.

    A component's ``initialize()`` that raised before any batch ran (e.g. on a bad ``-o``
    value it reads) is the local engine's error word for word, a config error (exit 2);
    anything else fails the run (exit 5), saying where Spark's whole error is.
    """
    own = reason.removeprefix(f"{ComponentFailure.__module__}.{ComponentFailure.__name__}: ")
    if own != reason and "initialize() raised" in own and before_first_batch:
        return StormshiftError(own)
    infra = reason.removeprefix(f"{InfraError.__module__}.{InfraError.__name__}: ")
    if infra != reason:  # a built-in source's broker away: the local engine's line, exit 2
        return InfraError(infra)
    where = f" (Spark's whole error: {details})" if details else ""
    return RunFailedError(f"spark engine: the streaming query failed: {reason}{where}")
