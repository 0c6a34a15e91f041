"""The extractor language of ``shadow.legacy``: which part of a legacy record goes where.

A *record* is one item of the legacy's output (a hash field, a string key, a
JSON line: ``legacy_outputs.py``). An *extractor* takes a part of it, then
optionally casts it: ``SOURCE`` or ``SOURCE|CAST``.

====================  ========================================================
``field``             the hash field (``redis_hash`` only)
``name``              the key name (Redis) or the file path (``jsonl``)
``*`` / ``*N``        the text the pattern's first / N-th ``*`` matched
``value``             the value text (a JSON-lines record: the line); text
                      that is a JSON number becomes that number
``json`` / ``json:P`` the value parsed as JSON, then the dotted path P
                      (``json:spend``, ``json:totals.0``)
====================  ========================================================

Casts: ``int``, ``float``, ``text``, ``json`` (parse text as JSON), ``s``
(epoch seconds to ms), ``iso`` (ISO-8601 with a zone to epoch ms). A record
an extractor cannot read raises ``LegacyMappingError`` naming the record,
its value and the extractor.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from stormshift.errors import LegacyMappingError

__all__ = ["CASTS", "LEGACY_KEY", "Extractor", "LegacyMappingError", "Record", "as_ms",
           "parse_extractor"]

CASTS = ("int", "float", "text", "json", "s", "iso")
LEGACY_KEY = "shadow.legacy"  # the config entry the mapping lives in (errors name it)


@dataclass(frozen=True)
class Record:
    """One legacy output record: where it sits (``name``, ``field``), its text, its time."""

    name: str
    value: str
    field: str | None = None
    wildcards: tuple[str, ...] = ()
    write_ms: int | None = None

    def where(self) -> str:
        return f"{self.name} field {self.field!r}" if self.field is not None else self.name


@dataclass(frozen=True)
class Extractor:
    """A parsed ``SOURCE[|CAST]`` (module docstring)."""

    text: str
    source: str  # field | name | wildcard | value | json
    path: tuple[str, ...] = ()
    wildcard: int = 0  # 1-based, for source "wildcard"
    cast: str | None = None

    def apply(self, record: Record) -> Any:
        if self.source == "field":
            raw: Any = record.field
        elif self.source == "name":
            raw = record.name
        elif self.source == "wildcard":
            raw = record.wildcards[self.wildcard - 1]
        elif self.source == "value":
            raw = _number_or_text(record.value) if self.cast is None else record.value
        else:
            raw = _follow(_json(record.value, self, record), self.path, self, record)
        return raw if self.cast is None else _cast(raw, self, record)


def parse_extractor(text: Any, where: str) -> Extractor:
    """``SOURCE[|CAST]`` -> ``Extractor`` (``where`` names the config entry in errors)."""
    if not isinstance(text, str) or not text.strip():
        raise LegacyMappingError(f"{where}: {text!r} is not an extractor; fix: one of field, "
                                 "name, *, *N, value, json, json:PATH, optionally |CAST")
    body, _, cast = text.strip().partition("|")
    if cast and cast not in CASTS:
        raise LegacyMappingError(f"{where}: cast {cast!r} in {text!r} is not one of "
                                 f"{list(CASTS)}")
    body = body.strip()
    if body in ("field", "name", "value"):
        return Extractor(text, body, cast=cast or None)
    if body == "*" or re.fullmatch(r"\*[1-9][0-9]*", body):
        return Extractor(text, "wildcard", wildcard=int(body[1:] or 1), cast=cast or None)
    if body == "json" or body.startswith("json:"):
        path = tuple(p for p in body[5:].split(".") if p)
        return Extractor(text, "json", path, cast=cast or None)
    raise LegacyMappingError(f"{where}: {body!r} in {text!r} is no extractor source; fix: one "
                             "of field, name, *, *N, value, json, json:PATH")


def _text(raw: Any) -> str:
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)


def _number_or_text(text: str) -> Any:
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else text


def _json(text: str, extractor: Extractor, record: Record) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise _bad(extractor, record, "the value is not JSON") from None


def _follow(value: Any, path: tuple[str, ...], extractor: Extractor, record: Record) -> Any:
    for step in path:
        if isinstance(value, Mapping) and step in value:
            value = value[step]
        elif isinstance(value, list) and step.isdigit() and int(step) < len(value):
            value = value[int(step)]
        else:
            raise _bad(extractor, record, f"it has no {step!r}")
    return value


def _cast(raw: Any, extractor: Extractor, record: Record) -> Any:
    cast = extractor.cast
    try:
        if cast == "int":
            return int(raw)
        if cast == "float":
            return float(raw)
        if cast == "text":
            return raw if isinstance(raw, str) else json.dumps(raw)
        if cast == "json":
            return json.loads(raw) if isinstance(raw, str) else raw
        if cast == "s":
            return int(float(raw) * 1000)
        return _iso_ms(str(raw))
    except (TypeError, ValueError) as exc:
        raise _bad(extractor, record, f"cast {cast} failed: {exc}") from None


def _iso_ms(text: str) -> int:
    when = datetime.fromisoformat(text)
    if when.tzinfo is None:
        raise ValueError(f"{text!r} has no time zone (add Z or +HH:MM)")
    return int(when.timestamp() * 1000)


def as_ms(value: Any, extractor: Extractor, record: Record) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _bad(extractor, record, f"event time {value!r} is not epoch ms (cast with |s or "
                                      "|iso)")
    return int(value)


def _bad(extractor: Extractor, record: Record, why: str) -> LegacyMappingError:
    shown = record.value if len(record.value) <= 80 else record.value[:79] + "…"
    return LegacyMappingError(f"legacy record {record.where()} = {shown!r}: extractor "
                              f"{extractor.text!r}: {why}; fix: the mapping in {LEGACY_KEY}")
