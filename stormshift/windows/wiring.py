"""What a windowed bolt task reads from its Storm ``context`` (pure functions).

- ``input_fields``: the fields of every input ``(component, stream)``;
- ``key_fields``: the fields windows are keyed by -- the configured ones, else
  the fields of the fields grouping feeding the bolt when all inputs agree,
  else none (one key per task);
- ``expected_partitions``: every ``(component, stream, task_id)`` the
  watermark waits for, in a stable order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["expected_partitions", "input_fields", "key_fields"]


def input_fields(ctx: Mapping[str, Any]) -> dict[tuple[str, str], list[str]]:
    return {(src, stream): list(fields)
            for src, streams in ctx.get("source->stream->fields", {}).items()
            for stream, fields in streams.items()}


def key_fields(ctx: Mapping[str, Any], configured: tuple[str, ...] | None) -> tuple[str, ...]:
    if configured is not None:
        return configured
    groupings = ctx.get("source->stream->grouping", {})
    found = {tuple(g.get("fields", [])) if g.get("type") == "FIELDS" else ()
             for streams in groupings.values() for g in streams.values()}
    return found.pop() if len(found) == 1 else ()


def expected_partitions(ctx: Mapping[str, Any]) -> list[tuple[str, str, int]]:
    groupings = ctx.get("source->stream->grouping", {})
    tasks = sorted(ctx.get("task->component", {}).items(), key=lambda kv: int(kv[0]))
    return [(src, stream, int(tid)) for src, streams in sorted(groupings.items())
            for stream in sorted(streams) for tid, comp in tasks if comp == src]
