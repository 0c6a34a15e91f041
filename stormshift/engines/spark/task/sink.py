"""Where leaf emits go: JSON-lines files, a Redis stream, or nowhere (counted).

A *leaf emit* is an emit on a stream nobody subscribes to: the topology's
output. Each (txid, component, task) writes its leaf emits once, under a name
that makes a re-run of the same batch overwrite instead of append:

- ``jsonl:DIR`` -> ``DIR/<component>/<stream>/<txid:012d>-<task:04d>.jsonl``,
  written to a temporary name and renamed (atomic on POSIX);
- ``redis:STREAM`` -> stream entries written in the task's commit
  (``state/task_txn.py`` step 6; layout and marker: ``state/sinkstream.py``):
  a re-run finds the marker and writes nothing;
- ``drop`` -> counted in the summary, not kept.

``SinkSpec.streams`` keeps only some leaf streams (``SparkEngine(sink_streams=...)``):
the others are counted as a drop sink counts them -- say a stream that feeds bolts in
the full topology and is a leaf only in a cut-down one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from stormshift.errors import OptionError

__all__ = ["SinkSpec", "keep_streams", "parse_sink", "read_jsonl_outputs", "write_files"]

Leaf = tuple[str, list[Any]]  # (stream, values)


@dataclass(frozen=True)
class SinkSpec:
    kind: str  # "jsonl" | "redis" | "drop"
    target: str = ""
    streams: frozenset[str] | None = None  # the leaf streams kept, "component:stream"; None: all

    def kept_streams(self, component: str) -> frozenset[str] | None:
        """The streams of ``component`` whose leaf emits this sink keeps (None: every one);
        the others are only counted, as a drop sink counts them."""
        if self.streams is None:
            return None
        return frozenset(s for c, _, s in (n.partition(":") for n in self.streams) if c == component)


def parse_sink(text: str | None, default_dir: str) -> SinkSpec:
    """``jsonl:DIR`` / ``redis:STREAM`` / ``drop``; None means JSON lines under ``default_dir``."""
    if not text:
        return SinkSpec("jsonl", default_dir)
    kind, _, target = text.partition(":")
    if kind == "drop" and not target:
        return SinkSpec("drop")
    if kind in ("jsonl", "redis") and target:
        return SinkSpec(kind, os.path.abspath(target) if kind == "jsonl" else target)
    raise OptionError(
        f"sink {text!r} is not understood; fix: use jsonl:DIR, redis:STREAM or drop"
    )


def keep_streams(spec: SinkSpec, names: Iterable[str] | None,
                 leaf_streams: Iterable[tuple[str, str]]) -> SinkSpec:
    """``spec`` keeping only the leaf streams ``names`` (``component:stream``; None: all)."""
    if names is None:
        return spec
    wanted, leaves = frozenset(names), sorted(f"{c}:{s}" for c, s in leaf_streams)
    unknown = sorted(wanted - set(leaves))
    if unknown:
        raise OptionError(f"sink streams {unknown} are not leaf streams of the topology; "
                          f"fix: name some of {leaves}")
    return replace(spec, streams=wanted)


def write_files(spec: SinkSpec, component: str, task: int, txid: int, leaves: Sequence[Leaf]) -> None:
    """A ``jsonl:`` sink's files of one task and batch (after its commit: a fenced attempt
    writes none); a re-run replaces them by name."""
    if spec.kind != "jsonl" or not leaves:
        return
    by_stream: dict[str, list[str]] = {}
    for stream, values in leaves:
        by_stream.setdefault(stream, []).append(json.dumps(values, default=str))
    for stream, lines in by_stream.items():
        folder = Path(spec.target) / component / stream
        folder.mkdir(parents=True, exist_ok=True)
        final = folder / f"{txid:012d}-{task:04d}.jsonl"
        tmp = folder / f".{final.name}.{os.getpid()}.tmp"
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
        os.replace(tmp, final)


def read_jsonl_outputs(folder: str) -> dict[tuple[str, str], list[list[Any]]]:
    """Every leaf emit under a jsonl sink dir, in (txid, task) order per stream."""
    outputs: dict[tuple[str, str], list[list[Any]]] = {}
    root = Path(folder)
    if not root.is_dir():
        return outputs
    for comp_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        for stream_dir in sorted(p for p in comp_dir.iterdir() if p.is_dir()):
            rows = outputs.setdefault((comp_dir.name, stream_dir.name), [])
            for f in sorted(stream_dir.glob("*.jsonl")):
                rows.extend(_lines(f))
    return outputs


def _lines(path: Path) -> Iterator[list[Any]]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)
