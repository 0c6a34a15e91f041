"""``KEY=VALUE`` options shared by ``stormshift run`` and ``stormshift submit``.

- ``-o/--option KEY=VALUE`` overrides a topology config entry (like streamparse's
  ``sparse run -o``): the value is parsed as JSON when it parses (``20000``,
  ``true``, ``null``, ``"x"``), else kept as the string, so ``-o a.path=/data/x``
  needs no quoting.
- ``--conf KEY=VALUE`` is a Spark setting, kept as a string (spark-submit's ``--conf``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import click

__all__ = ["parse_confs", "parse_overrides", "split_pair"]


def split_pair(text: str, flag: str) -> tuple[str, str]:
    """``KEY=VALUE`` -> ``(KEY, VALUE)``; a clear usage error otherwise."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise click.BadParameter(f"{text!r} is not KEY=VALUE (e.g. {flag} adclicks.events=20000)",
                                 param_hint=flag)
    return key, value


def _json_or_text(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return value


def parse_overrides(pairs: Iterable[str]) -> dict[str, Any]:
    """Topology config overrides from ``-o`` values (later ones win)."""
    out: dict[str, Any] = {}
    for text in pairs:
        key, value = split_pair(text, "-o")
        out[key] = _json_or_text(value)
    return out


def parse_confs(pairs: Iterable[str]) -> dict[str, str]:
    """Spark settings from ``--conf`` values (later ones win)."""
    return dict(split_pair(text, "--conf") for text in pairs)
