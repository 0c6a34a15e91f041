"""``compare_live``: the port's outputs under a shadow run against the legacy's own outputs.

The *live shadow*: the port runs beside the production topology, reading the
same source as its own consumer (a ``RedisStreamSpout`` keeps its position in
the port's checkpoint, nothing is acknowledged in Redis; growing JSON-lines
files likewise), under its own state namespace, and writes its leaf emits to
its sink (``jsonl:DIR`` or ``redis:STREAM``), never the legacy's keys. This
module compares what both sides wrote, key by key, over a *window*. Runs in
the driver process (the CLI or a script, e.g. from cron); no engine runs.

Call order:

1. ``plan_live``: the port's result rules (``shadow.results``) and the legacy
   mapping (``shadow.legacy``, ``legacy_outputs.py``) are checked; every
   config error raises ``LegacyMappingError`` / ``StormshiftError`` here,
   before any I/O.
2. ``execute_live``: per mapped leaf stream, read the legacy's records and
   the port's emits, keep those in the window, compare
   (``compare.compare_stream``).

*Window* ``[since_ms, until_ms)``: a row is kept when its time is in it, or
when it has no time. A ``latest`` stream also leaves out the keys *in
flight*: written at or after ``until`` on either side (the legacy's Redis
hash then holds a later value than the one at ``until``, and the port may lag
production), so ``--until 5m`` compares every key both sides have settled. A row's time is its *event time* when one is declared
(the port: ``shadow.results[...].event_time``; the legacy: the mapping's
``event_time``), else its *write time* (the port's jsonl sink: the batch
file's modification time; its Redis stream sink: the entry id's ms; the
legacy's JSON lines: the file's modification time; Redis keys and hashes:
none, they are the current state). The report warns when a window is given
and one side's rows are untimed.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stormshift.errors import NotFoundError, OptionError, StormshiftError
from stormshift.shadow.classify import LIVE_DIFFERENCE, ROUNDING
from stormshift.shadow.compare import StreamComparison, Tolerance, compare_stream, count_causes
from stormshift.shadow.legacy_outputs import (
    LegacyMapping,
    TimedRow,
    parse_mappings,
    read_records,
)
from stormshift.shadow.results import RESULTS_KEY, ResultMode, ResultSpec, result_specs
from stormshift.shadow.run import tolerance_of
from stormshift.state.client import Redis
from stormshift.topology.graph import TopologyGraph

__all__ = [
    "LIVE_DIFFERENCE", "LivePlan", "LiveResult", "PortSink", "Window", "compare_live",
    "execute_live", "parse_port_sink", "parse_when", "plan_live",
]

_DURATION = re.compile(r"^(?P<n>[0-9]+(?:\.[0-9]+)?)(?P<unit>ms|s|m|h|d)$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_when(text: str | None, now_ms: int) -> int | None:
    """A window bound in epoch ms: ``now``, a duration ago (``90s``, ``15m``, ``1h``,
    ``2d``), epoch ms (digits), or ISO-8601 with a zone; None for None or empty."""
    if text is None or not text.strip():
        return None
    text = text.strip()
    if text == "now":
        return now_ms
    match = _DURATION.match(text)
    if match:
        return now_ms - int(float(match["n"]) * _UNIT_MS[match["unit"]])
    if text.isdigit():
        return int(text)
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        when = None
    if when is None or when.tzinfo is None:
        raise OptionError(
            f"time {text!r} is not understood; fix: now, a duration ago (30s, 15m, 1h, 2d), "
            "epoch ms, or ISO-8601 with a zone (2024-05-01T10:00:00Z)")
    return int(when.timestamp() * 1000)


@dataclass(frozen=True)
class Window:
    """``[since_ms, until_ms)`` in epoch ms; None: unbounded on that side."""

    since_ms: int | None = None
    until_ms: int | None = None

    def __post_init__(self) -> None:
        if self.since_ms is not None and self.until_ms is not None and \
                self.since_ms >= self.until_ms:
            raise OptionError(f"the window is empty: since {_iso(self.since_ms)} is not "
                              f"before until {_iso(self.until_ms)}; fix: --since earlier")

    @property
    def bounded(self) -> bool:
        return self.since_ms is not None or self.until_ms is not None

    def keeps(self, when: int | None) -> bool:
        if when is None:
            return True
        return (self.since_ms is None or when >= self.since_ms) and \
            (self.until_ms is None or when < self.until_ms)

    def describe(self) -> str:
        if not self.bounded:
            return "whole outputs"
        since = _iso(self.since_ms) if self.since_ms is not None else "the start"
        until = _iso(self.until_ms) if self.until_ms is not None else "now"
        return f"{since} .. {until}"


@dataclass(frozen=True)
class PortSink:
    """Where the port's run writes its leaf emits: ``jsonl:DIR`` or ``redis:STREAM``."""

    kind: str
    target: str

    def describe(self) -> str:
        return f"{'JSON lines under' if self.kind == 'jsonl' else 'Redis stream'} {self.target}"


def parse_port_sink(text: str | None) -> PortSink:
    kind, _, target = (text or "").partition(":")
    if kind in ("jsonl", "redis") and target:
        return PortSink(kind, str(Path(target).absolute()) if kind == "jsonl" else target)
    raise OptionError(f"--port-sink {text!r} is not understood; fix: the --sink the port "
                      "runs with: jsonl:DIR or redis:STREAM")


@dataclass(frozen=True)
class LivePlan:
    """A checked live compare (``plan_live``)."""

    graph: TopologyGraph
    mappings: tuple[LegacyMapping, ...]
    sink: PortSink
    window: Window
    tolerance: Tolerance
    redis_url: str | None
    legacy_redis_url: str | None


@dataclass
class LiveResult:
    """The comparison of every mapped leaf stream (same reports as ``ShadowResult``)."""

    topology: str
    input: str
    streams: list[StreamComparison]
    tolerance: Tolerance = field(default_factory=Tolerance)
    warnings: list[str] = field(default_factory=list)
    window: Window = field(default_factory=Window)
    port_engine: str = "spark"
    faults: list[str] = field(default_factory=list)
    injected: list[str] = field(default_factory=list)
    legacy: Any = None  # no runs: the reports leave out the per-component counters
    port: Any = None
    states: list[Any] = field(default_factory=list)  # no runs, no final state to compare

    sides = "legacy = the production topology's own outputs, port = the shadow run's sink"

    @property
    def context(self) -> str:
        return f"live, window {self.window.describe()}; {self.input}"

    @property
    def equal(self) -> bool:
        return all(s.equal for s in self.streams)

    @property
    def exit_code(self) -> int:
        """0 safe to switch, 1 the port differs, 3 nothing compared (``verdict.py``)."""
        from stormshift.shadow.verdict import judge

        return judge(self).exit_code

    def causes(self) -> dict[str, int]:
        """Divergences per cause, over all streams (sorted by cause)."""
        return count_causes(self.streams)

    def to_dict(self, examples: int = 50) -> dict[str, Any]:
        return {
            "topology": self.topology, "live": True, "input": self.input, "equal": self.equal,
            "exit_code": self.exit_code,
            "window": {"since_ms": self.window.since_ms, "until_ms": self.window.until_ms},
            "tolerance": {"abs": self.tolerance.abs, "rel": self.tolerance.rel},
            "causes": self.causes(), "warnings": list(self.warnings),
            "streams": [s.to_dict(examples) for s in self.streams],
        }


def plan_live(graph: TopologyGraph, *, port_sink: str, since: str | None = None,
              until: str | None = None, now_ms: int | None = None,
              legacy: Mapping[str, Any] | None = None, results: Mapping[str, Any] | None = None,
              tolerance: Tolerance | None = None, redis_url: str | None = None,
              legacy_redis_url: str | None = None) -> LivePlan:
    """Step 1 of the module docstring (``legacy`` / ``results`` override the config's
    ``shadow.legacy`` / ``shadow.results``)."""
    from stormshift.shadow.legacy_outputs import LEGACY_KEY

    config = dict(graph.config)
    if legacy is not None:
        config[LEGACY_KEY] = legacy
    if results is not None:
        config[RESULTS_KEY] = results
    specs = result_specs(graph, config)
    inner = [s.label for s in specs if not s.leaf]
    if inner:  # production Storm keeps only what it outputs: nothing taps its inner streams
        raise OptionError(
            f"{RESULTS_KEY} names {inner}, which some bolt reads: a live shadow compares only "
            "what the legacy topology outputs; fix: compare them in `stormshift shadow` "
            "(it taps inner streams on both sides)")
    mappings = parse_mappings(config, specs)
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    window = Window(parse_when(since, now), parse_when(until, now))
    tol = tolerance if tolerance is not None else tolerance_of(config)
    return LivePlan(graph, tuple(mappings.values()), parse_port_sink(port_sink), window, tol,
                    redis_url, legacy_redis_url)


def compare_live(graph: TopologyGraph, **settings: Any) -> LiveResult:
    """Plan and execute a live compare (``plan_live``'s arguments)."""
    return execute_live(plan_live(graph, **settings))


def execute_live(plan: LivePlan, connect: Callable[[str | None], Any] | None = None) -> LiveResult:
    """Step 2 of the module docstring; ``connect(url)`` gives a Redis client (default
    redis-py, the legacy's URL falling back to ``legacy_redis_url`` then ``redis_url``)."""
    clients: dict[str | None, Any] = {}

    def client(url: str | None) -> Any:
        url = url or plan.legacy_redis_url or plan.redis_url
        if url not in clients:
            clients[url] = (connect or _connect)(url)
        return clients[url]

    try:
        port_rows = _port_rows(plan.sink, [m.spec for m in plan.mappings],
                               lambda: client(plan.redis_url))
        streams, warnings = [], []
        for mapping in plan.mappings:
            legacy = [mapping.row(r) for r in read_records(mapping, client)]
            legacy.sort(key=lambda tr: -1 if tr[0] is None else tr[0])  # stable: source order
            port = port_rows.get(mapping.label, [])
            warnings.extend(_window_warnings(mapping, legacy, port, plan.window))
            in_flight = _in_flight(mapping.spec, [*legacy, *port], plan.window)
            if in_flight:
                warnings.append(f"{mapping.label}: {len(in_flight)} keys written at or after "
                                "the window's end on either side were left out (in flight)")
            comparison = compare_stream(
                mapping.spec, _kept(mapping.spec, legacy, plan.window, in_flight),
                _kept(mapping.spec, port, plan.window, in_flight), plan.tolerance)
            for d in comparison.divergences:
                d.cause = ROUNDING if d.within_tolerance else LIVE_DIFFERENCE
            streams.append(comparison)
    finally:
        for c in clients.values():
            c.close()
    legacy_text = "; ".join(f"{m.label} <- {m.describe()}" for m in plan.mappings)
    return LiveResult(plan.graph.name, f"legacy: {legacy_text}; port: {plan.sink.describe()}",
                      streams, plan.tolerance, warnings, plan.window)


def _connect(url: str | None) -> Any:
    """A client of the server at ``url`` that answered a PING; else one line with the fix
    (``state/reach.describe``), the URL's shape checked first (``state/url.py``)."""
    import redis

    from stormshift.state.reach import describe
    from stormshift.state.url import check_url

    url = check_url(url or "redis://127.0.0.1:6379")
    client = redis.Redis.from_url(url)
    try:
        client.ping()
    except redis.RedisError as exc:
        raise StormshiftError(f"{describe(exc, url)} (the legacy's outputs: --legacy-redis, "
                              "or shadow.legacy[...].redis)") from None
    return client


def _kept(spec: ResultSpec, rows: list[TimedRow], window: Window,
          skip: set[str]) -> list[list[Any]]:
    return [row for when, row in rows
            if window.keeps(when) and not (skip and _key(spec, row) in skip)]


def _in_flight(spec: ResultSpec, rows: list[TimedRow], window: Window) -> set[str]:
    """``latest`` streams: keys either side wrote at or after ``until`` (a side that keeps
    only the latest value per key, as a Redis hash does, no longer shows the one at
    ``until``; and the port may not have caught up with them yet)."""
    if spec.mode is not ResultMode.LATEST or window.until_ms is None:
        return set()
    return {_key(spec, row) for when, row in rows if when is not None and when >= window.until_ms}


def _key(spec: ResultSpec, row: list[Any]) -> str:
    return json.dumps([row[spec.fields.index(f)] for f in spec.key], default=str)


def _window_warnings(mapping: LegacyMapping, legacy: list[TimedRow], port: list[TimedRow],
                     window: Window) -> list[str]:
    if not window.bounded:
        return []
    out = []
    for side, rows in (("legacy", legacy), ("port", port)):
        if rows and all(when is None for when, _ in rows):
            out.append(f"{mapping.label}: the {side}'s rows have no time (event_time or write "
                       "time), so the window does not filter them")
    return out


# -- the port's sink ----------------------------------------------------------------------
def _port_rows(sink: PortSink, specs: list[ResultSpec],
               client: Callable[[], Any]) -> dict[str, list[TimedRow]]:
    """Each spec's emits in the sink, in write order, with their times."""
    wanted = {(s.component, s.stream): s for s in specs}
    out: dict[str, list[TimedRow]] = {s.label: [] for s in specs}
    emits = _jsonl_emits(sink.target, wanted) if sink.kind == "jsonl" else \
        _redis_emits(client(), sink.target, wanted)
    for (component, stream), write_ms, values in emits:
        spec = wanted[(component, stream)]
        out[spec.label].append((_event_time(spec, values, write_ms), values))
    return out


Emit = tuple[tuple[str, str], int, list[Any]]


def _jsonl_emits(folder: str, wanted: Mapping[tuple[str, str], ResultSpec]) -> Iterator[Emit]:
    """The jsonl sink's layout: ``DIR/<component>/<stream>/<txid>-<task>.jsonl``."""
    root = Path(folder)
    if not root.is_dir():
        raise NotFoundError(f"--port-sink jsonl:{folder}: no such directory; fix: the --sink "
                            "DIR the port runs with (has it written a batch yet?)")
    for component, stream in sorted(wanted):
        for file in sorted((root / component / stream).glob("*.jsonl")):
            write_ms = int(file.stat().st_mtime * 1000)
            with file.open(encoding="utf-8") as fh:
                for line in fh:
                    if line.strip():
                        yield (component, stream), write_ms, json.loads(line)


def _redis_emits(r: Redis, key: str, wanted: Mapping[tuple[str, str], ResultSpec]) -> Iterator[Emit]:
    """The redis sink's entries (``state/sinkstream.py``), by id."""
    from stormshift.state import sinkstream

    if not sinkstream.exists(r, key):
        raise NotFoundError(f"--port-sink redis:{key}: no such stream; fix: the --sink "
                            "redis:STREAM the port runs with, on --redis")
    for ms, component, stream, values in sinkstream.read_entries(r, key):
        if (component, stream) in wanted:
            yield (component, stream), ms, values


def _event_time(spec: ResultSpec, values: list[Any], write_ms: int) -> int:
    if spec.event_time:
        at = spec.fields.index(spec.event_time)
        value = values[at] if at < len(values) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return int(value)
    return write_ms


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds").replace(
        "+00:00", "Z")
