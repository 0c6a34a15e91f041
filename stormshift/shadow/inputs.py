"""The input both sides of a shadow read: the project's spout, JSON lines, or a Redis range.

``--input`` forms:

- ``spout`` (default): the topology's own spouts with their config and seed;
- ``jsonl:DIR``: every spout is replaced by ``JsonLinesSpout`` reading DIR
  (``jsonlines.bounded``); with several spouts, spout ``S`` reads ``DIR/S``;
- ``redis:STREAM[:START-END]``: the entries ``START..END`` (ids, inclusive;
  default the whole stream) are first copied, ids kept, to a snapshot stream
  ``shadow-input:{NAMESPACE}:STREAM`` (so both sides read exactly the same
  entries however the source grows), and every spout is replaced by
  ``RedisStreamSpout`` reading it (bounded); with several spouts, spout ``S``
  reads ``STREAM:S``.

The replacement works as ``stormshift.replacements`` does for a Java spout:
the spout keeps its name, par and declared outputs (so its consumers are
unchanged) and runs a Python class with its own config. A spout declaring
one field gets the raw line / ``payload``; one declaring several gets the
values of those keys of a JSON object (``jsonlines.fields`` /
``redis_streams.json_fields``); set either with ``-o`` to change that.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass
from typing import Any

from stormshift.errors import NotFoundError, OptionError
from stormshift.topology.graph import ComponentDef, TopologyGraph, freeze
from stormshift.topology.loader import with_class

__all__ = ["InputSpec", "apply_input", "parse_input", "snapshot_stream"]

JSONL_CLASS = "stormshift.spouts.jsonlines.JsonLinesSpout"
REDIS_CLASS = "stormshift.spouts.redis_streams.RedisStreamSpout"
_RANGE = re.compile(r"^(?P<start>[0-9]+(?:-[0-9]+)?|-)-(?P<end>[0-9]+(?:-[0-9]+)?|\+)$")


@dataclass(frozen=True)
class InputSpec:
    """A parsed ``--input``: kind ``spout`` / ``jsonl`` / ``redis``."""

    kind: str = "spout"
    target: str = ""
    start: str = "-"
    end: str = "+"

    def describe(self) -> str:
        if self.kind == "spout":
            return "the project's own spouts"
        if self.kind == "jsonl":
            return f"JSON lines under {self.target}"
        return f"Redis stream {self.target} entries {self.start}..{self.end}"


def parse_input(text: str | None) -> InputSpec:
    """``spout`` | ``jsonl:DIR`` | ``redis:STREAM[:START-END]`` (ids ``ms[-seq]``, ``-``, ``+``)."""
    if not text or text == "spout":
        return InputSpec()
    kind, _, rest = text.partition(":")
    if kind == "jsonl" and rest:
        return InputSpec("jsonl", os.path.abspath(rest))
    if kind == "redis" and rest:
        stream, _, bounds = rest.rpartition(":")
        match = _RANGE.match(bounds) if stream else None
        if match is None:
            return InputSpec("redis", rest)
        return InputSpec("redis", stream, match["start"], match["end"])
    raise OptionError(
        f"--input {text!r} is not understood; fix: use spout, jsonl:DIR or "
        "redis:STREAM[:START-END] (e.g. redis:clicks:1700000000000-1700003600000)"
    )


def snapshot_stream(namespace: str, stream: str) -> str:
    """Where the shadow keeps its copy of a source stream's range."""
    return f"shadow-input:{{{namespace}}}:{stream}"


def apply_input(graph: TopologyGraph, spec: InputSpec, *, namespace: str = "shadow",
                source_url: str | None = None) -> TopologyGraph:
    """``graph`` with every spout reading ``spec`` (the graph itself for ``spout``).

    For ``redis`` the range is copied to the snapshot stream first (on ``source_url``).
    """
    if spec.kind == "spout":
        return graph
    spouts = graph.spouts
    components = dict(graph.components)
    for spout in spouts:
        suffix = spout.name if len(spouts) > 1 else ""
        if spec.kind == "jsonl":
            path = os.path.join(spec.target, suffix) if suffix else spec.target
            if not os.path.isdir(path):
                raise OptionError(
                    f"--input jsonl: {path} is not a directory; fix: point it at the directory of "
                    f"{spout.name!r}'s JSON-lines files"
                )
            components[spout.name] = _replaced(graph, spout, JSONL_CLASS, "jsonlines", {"path": path})
        else:
            source = f"{spec.target}:{suffix}" if suffix else spec.target
            url = source_url or os.environ.get("STORMSHIFT_SOURCE_REDIS_URL") or "redis://127.0.0.1:6379"
            key = _copy_range(url, source, snapshot_stream(namespace, source), spec.start, spec.end)
            components[spout.name] = _replaced(
                graph, spout, REDIS_CLASS, "redis_streams", {"keys": [key], "url": url})
    return dataclasses.replace(graph, components=freeze(components))


def _replaced(graph: TopologyGraph, spout: ComponentDef, class_path: str, prefix: str,
              settings: dict[str, Any]) -> ComponentDef:
    fields = spout.outputs["default"].fields if "default" in spout.outputs else ()
    config = dict(spout.config)
    for key, value in settings.items():
        config[f"{prefix}.{key}"] = value
    config[f"{prefix}.bounded"] = True
    field_key = f"{prefix}.fields" if prefix == "jsonlines" else f"{prefix}.json_fields"
    if len(fields) > 1 and field_key not in graph.config and not config.get(f"{prefix}.fields"):
        config[field_key] = list(fields)
    return dataclasses.replace(with_class(spout, class_path, graph.source_dirs, config),
                               replaces=spout.class_path)


def _copy_range(url: str, source: str, target: str, start: str, end: str) -> str:
    import redis

    client: Any = redis.Redis.from_url(url)
    try:
        if not client.exists(source):
            raise NotFoundError(f"--input redis: no stream {source!r} on {_safe(url)}; "
                                "fix: check the stream key and --redis/STORMSHIFT_SOURCE_REDIS_URL")
        client.delete(target)
        position = start
        while True:
            entries = client.xrange(source, min=position, max=end, count=10_000)
            if not entries:
                break
            with client.pipeline(transaction=False) as pipe:
                for entry_id, fields in entries:
                    pipe.xadd(target, fields, id=entry_id)
                pipe.execute()
            position = f"({entries[-1][0].decode()}"
        if not client.exists(target):
            raise NotFoundError(f"--input redis: stream {source!r} has no entry in {start}..{end}")
    finally:
        client.close()
    return target


def _safe(url: str) -> str:
    return re.sub(r"//[^@/]*@", "//***@", url)
