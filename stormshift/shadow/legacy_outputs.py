"""The legacy topology's own outputs, read where it wrote them and mapped to the port's rows.

A live shadow compares the port's leaf emits with what the production Storm
topology wrote itself (a bolt that ``HSET``s, ``SET``s or appends JSON lines).
``shadow.legacy`` in the port's topology config (or ``-o``) says, per leaf
stream of the port, where the legacy wrote its result and how a *record*
there becomes a row of that stream's fields::

    "shadow.legacy": {
        "client_spent_bolt:default": {
            "redis_hash": "spend:*",     # every hash matching the pattern
            "key": "field",              # the port's key fields, in order
            "value": "json:spend",       # the port's value fields, in order
            "event_time": "json:ts"      # optional: epoch ms of the record
        }
    }

*Sources* (exactly one per stream), and what one record is:

- ``redis_hash: PATTERN``: every field of every hash whose name matches the
  Redis glob PATTERN (``SCAN MATCH``);
- ``redis_key: PATTERN``: every string key matching PATTERN;
- ``jsonl: PATH``: every line of a JSON-lines file, of every ``*.jsonl``
  file under a directory (recursively), or of the files a glob matches.

``redis`` (optional): the legacy's Redis URL for this stream (default the
command's ``--legacy-redis``, else ``--redis``).

*Extractors* (``key``, ``value``: one or a list; ``event_time``: one) take a
part of a record (``field``, ``name``, ``*N``, ``value``, ``json:PATH``) and
optionally cast it (``|int``): the language is in ``extractors.py``.
Defaults: ``key`` is ``field`` for hashes and ``*`` for a ``redis_key``
pattern with one ``*`` (required otherwise); ``value`` is ``value``. The
counts must match the port's key and value fields (``shadow.results``).

*Time*: a record's time is its ``event_time`` when declared, else its write
time when the source has one (``jsonl``: the file's modification time);
Redis keys and hashes keep no write time, so their records are *untimed*
(the current state) and a time window does not filter them.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stormshift.shadow.extractors import (
    LEGACY_KEY,
    Extractor,
    LegacyMappingError,
    Record,
    as_ms,
    parse_extractor,
)
from stormshift.shadow.results import ResultSpec

__all__ = ["LEGACY_KEY", "LegacyMapping", "TimedRow", "glob_regex", "parse_mappings",
           "read_records"]

SOURCES = ("redis_hash", "redis_key", "jsonl")
_ENTRY_KEYS = {*SOURCES, "key", "value", "event_time", "redis"}
_EXAMPLE = ('{"client_spent_bolt:default": {"redis_hash": "spend:*", "key": "field", '
            '"value": "json:spend"}}')

TimedRow = tuple[int | None, list[Any]]  # (time in epoch ms or None: untimed, row)


@dataclass(frozen=True)
class LegacyMapping:
    """Where the legacy wrote one leaf stream's result, and how a record becomes its row."""

    spec: ResultSpec
    source: str  # redis_hash | redis_key | jsonl
    target: str  # the pattern or path
    key: tuple[Extractor, ...]
    value: tuple[Extractor, ...]
    event_time: Extractor | None = None
    redis_url: str | None = None

    @property
    def label(self) -> str:
        return self.spec.label

    def describe(self) -> str:
        what = {"redis_hash": "Redis hashes", "redis_key": "Redis keys", "jsonl": "JSON lines"}
        return f"{what[self.source]} {self.target}"

    def row(self, record: Record) -> TimedRow:
        """The record as a row of the stream's fields (fields nothing maps stay None)."""
        spec = self.spec
        row: list[Any] = [None] * len(spec.fields)
        index = {f: i for i, f in enumerate(spec.fields)}
        for name, extractor in zip(spec.key, self.key, strict=True):
            row[index[name]] = extractor.apply(record)
        for name, extractor in zip(spec.values, self.value, strict=True):
            row[index[name]] = extractor.apply(record)
        when = record.write_ms
        if self.event_time is not None:
            when = as_ms(self.event_time.apply(record), self.event_time, record)
        if spec.event_time and row[index[spec.event_time]] is None:
            row[index[spec.event_time]] = when
        return when, row


def parse_mappings(config: Mapping[str, Any], specs: list[ResultSpec]) -> dict[str, LegacyMapping]:
    """``shadow.legacy`` of ``config`` checked against the port's leaf streams, by label."""
    declared = config.get(LEGACY_KEY)
    if not declared or not isinstance(declared, Mapping):
        raise LegacyMappingError(
            f"{LEGACY_KEY} is {'missing' if not declared else repr(declared)}: a live compare "
            f"needs to know where the legacy wrote each leaf stream; fix: -o '{LEGACY_KEY}="
            f"{_EXAMPLE}'")
    by_label = {s.label: s for s in specs}
    by_component = {s.component: s for s in specs if s.stream == "default"}
    out: dict[str, LegacyMapping] = {}
    for label in sorted(declared):
        spec = by_label.get(label) or by_component.get(label)
        if spec is None:
            raise LegacyMappingError(f"{LEGACY_KEY} names {label!r}, which is not a leaf stream "
                                     f"of the port; fix: use one of {sorted(by_label)}")
        out[spec.label] = _mapping(spec, declared[label], f"{LEGACY_KEY}[{label!r}]")
    return out


def _mapping(spec: ResultSpec, entry: Any, where: str) -> LegacyMapping:
    if not isinstance(entry, Mapping):
        raise LegacyMappingError(f"{where} must be an object, got {entry!r}; fix: e.g. "
                                 f"{_EXAMPLE}")
    unknown = sorted(set(entry) - _ENTRY_KEYS)
    if unknown:
        raise LegacyMappingError(f"{where} has unknown keys {unknown}; fix: only "
                                 f"{sorted(_ENTRY_KEYS)} are read")
    sources = [s for s in SOURCES if s in entry]
    if len(sources) != 1:
        raise LegacyMappingError(f"{where} names {sources or 'no source'}; fix: exactly one of "
                                 f"{list(SOURCES)}")
    source = sources[0]
    target = entry[source]
    if not isinstance(target, str) or not target:
        raise LegacyMappingError(f"{where}.{source} must be a pattern or path, got {target!r}")
    wildcards = target.count("*") if source != "jsonl" else 0
    key = _extractors(entry.get("key", _default_key(source, wildcards)), f"{where}.key",
                      spec.key, "key")
    value = _extractors(entry.get("value", "value"), f"{where}.value", spec.values, "value")
    event_time = None
    if entry.get("event_time") is not None:
        event_time = parse_extractor(entry["event_time"], f"{where}.event_time")
    for extractor in (*key, *value, *([event_time] if event_time else [])):
        _check_fits(extractor, source, wildcards, where)
    redis_url = entry.get("redis")
    if redis_url is not None and not isinstance(redis_url, str):
        raise LegacyMappingError(f"{where}.redis must be a URL, got {redis_url!r}")
    if source == "jsonl":
        target = os.path.abspath(os.path.expanduser(target))
    return LegacyMapping(spec, source, target, key, value, event_time, redis_url)


def _default_key(source: str, wildcards: int) -> Any:
    if source == "redis_hash":
        return "field"
    if source == "redis_key" and wildcards == 1:
        return "*"
    return None


def _extractors(raw: Any, where: str, fields: tuple[str, ...], what: str) -> tuple[Extractor, ...]:
    if raw is None:
        raise LegacyMappingError(f"{where} is required here; fix: list one extractor per "
                                 f"{what} field of the port {list(fields)} (e.g. \"json:{fields[0] if fields else 'k'}\")")
    items = [raw] if isinstance(raw, str) else raw
    if not isinstance(items, list):
        raise LegacyMappingError(f"{where} must be an extractor or a list of them, got {raw!r}")
    out = tuple(parse_extractor(item, where) for item in items)
    if len(out) != len(fields):
        raise LegacyMappingError(
            f"{where} gives {len(out)} extractor(s) {[e.text for e in out]} for the port's "
            f"{len(fields)} {what} field(s) {list(fields)}; fix: one extractor per field, in "
            f"that order (or change shadow.results)")
    return out


def _check_fits(extractor: Extractor, source: str, wildcards: int, where: str) -> None:
    if extractor.source == "field" and source != "redis_hash":
        raise LegacyMappingError(f"{where}: 'field' reads a hash field, but the source is "
                                 f"{source}; fix: use name, *, value or json:PATH")
    if extractor.source == "wildcard" and extractor.wildcard > wildcards:
        raise LegacyMappingError(
            f"{where}: {extractor.text!r} needs {extractor.wildcard} '*' in the {source} "
            f"pattern, which has {wildcards}; fix: use a '*' the pattern has, or field/json:PATH")


# -- reading ------------------------------------------------------------------------------
def read_records(mapping: LegacyMapping, connect: Callable[[str | None], Any]) -> list[Record]:
    """Every record of ``mapping``'s source (``connect(url)``: a Redis client for the URL)."""
    if mapping.source == "jsonl":
        return list(_jsonl_records(mapping.target))
    client = connect(mapping.redis_url)
    matcher = glob_regex(mapping.target)
    kind = "hash" if mapping.source == "redis_hash" else "string"
    names = sorted(_text(n) for n in client.scan_iter(match=mapping.target, count=1000,
                                                        _type=kind))
    records: list[Record] = []
    for name in names:
        match = matcher.fullmatch(name)
        wildcards = match.groups() if match else ()
        if kind == "hash":
            for fld, val in sorted(client.hgetall(name).items()):
                records.append(Record(name, _text(val), _text(fld), wildcards))
        else:
            val = client.get(name)
            if val is not None:
                records.append(Record(name, _text(val), None, wildcards))
    return records


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A Redis glob as a regex with one group per ``*`` (``?`` and ``[...]`` kept)."""
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "*":
            out.append("(.*?)")
        elif ch == "?":
            out.append(".")
        elif ch == "[" and "]" in pattern[i + 1:]:
            end = pattern.index("]", i + 1)
            out.append("[" + pattern[i + 1:end].replace("^", "\\^", 1) + "]")
            i = end
        elif ch == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(ch))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def _jsonl_records(target: str) -> Iterator[Record]:
    path = Path(target)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.jsonl") if not p.name.startswith("."))
    elif path.is_file():
        files = [path]
    else:
        files = sorted(Path(p) for p in glob.glob(target))
    if not files:
        raise LegacyMappingError(f"jsonl {target}: no JSON-lines file there; fix: point "
                                 "shadow.legacy's jsonl at the legacy's output file or directory")
    for file in files:
        write_ms = int(file.stat().st_mtime * 1000)
        with file.open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    yield Record(str(file), line.strip(), None, (), write_ms)


# -- values -------------------------------------------------------------------------------


def _text(raw: Any) -> str:
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
