"""``-o KEY=VALUE`` checked at load, in the driver, before any engine starts.

Why here: a bad value read in a spout's ``initialize()`` fails in the driver on
the local engine (exit 2, one line) but inside a Spark task on the Spark
engine (a wall of JVM frames). Checked at load, the same mistake reads the
same on both, before the JVM starts:

- stormshift's own keys (``stormshift.*``, ``state.*``, ``shadow.*``, the
  Storm ``topology.*`` settings the engines read) have a stated kind;
- a key the topology declares (its ``config``, ``config.json``) takes a value
  of the kind of its declared default (``adclicks.events`` is ``200000``: an
  integer, so ``abc`` is refused; ``null`` always resets to the default);
- a key nobody declares or reads (``known`` also holds the keys the project's
  sources read: ``conf.get("...")``) is accepted, with a "did you mean"
  warning when it is close to one that is.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from stormshift.errors import TopologyError
from stormshift.private import MASK, is_secret_key, mask_text

LOG_LEVELS = {  # the log level names a topology's config may use -> Python's levels
    "TRACE": 5,
    "DEBUG": 10,
    "INFO": 20,
    "WARN": 30,
    "WARNING": 30,
    "ERROR": 40,
    "CRITICAL": 50,
}
"""Here, at the bottom layer, so the config check needs no engine; ``engines/logs.py``
maps a component's log lines with it."""

__all__ = ["LOG_LEVELS", "OWN_KEYS", "config_keys_read", "keys_read", "refuse_bad_values",
           "unknown_key_warnings"]


def _int(v: Any) -> bool:
    return type(v) is int


def _number(v: Any) -> bool:
    return type(v) in (int, float)


def _positive(v: Any) -> bool:
    return _number(v) and v > 0


def _count(v: Any) -> bool:
    return _int(v) and v >= 0


def _flag(v: Any) -> bool:
    return type(v) is bool or str(v).lower() in ("true", "false", "1", "0", "yes", "no")


def _mapping(v: Any) -> bool:
    return isinstance(v, Mapping)


def _text(v: Any) -> bool:
    return isinstance(v, str) and bool(v)


def _level(v: Any) -> bool:
    return str(v).upper() in LOG_LEVELS


# key -> (test, what is expected, an example); None ("null") always means "the default"
OWN_KEYS: dict[str, tuple[Callable[[Any], bool], str, str]] = {
    "stormshift.idle_timeout_secs": (lambda v: _number(v) and v >= 0, "seconds >= 0", "10"),
    "stormshift.max_replays": (_count, "an integer >= 0", "10"),
    "stormshift.redis_outage_s": (_positive, "seconds > 0", "180"),
    "stormshift.spout.seen_window": (lambda v: _int(v) and v > 0, "an integer > 0", "100000"),
    "stormshift.spout.lead_batches": (_count, "an integer >= 0", "0"),
    "stormshift.spout.host": (_flag, "true or false", "true"),
    "stormshift.spout.executor": (_flag, "true or false", "false"),
    "stormshift.spark.source_local": (lambda v: type(v) is bool, "true or false", "true"),
    "stormshift.fuse": (lambda v: type(v) is bool, "true or false (false: no fused stages)", "false"),
    "stormshift.fuse.keyed": (lambda v: isinstance(v, list) and all(_text(n) for n in v),
                              "a JSON list of bolt names", "'[\"bolt\"]'"),
    "stormshift.replacements": (_mapping, "a JSON object", '{"spout": "module:Class"}'),
    "stormshift.start_offsets": (_mapping, "a JSON object", '{"spout": {"topic/00000": 41}}'),
    "cutover.position": (_mapping, "a JSON object", '{"spout": {"kafka_group": "legacy"}}'),
    "cutover.seed": (_mapping, "a JSON object", '{"bolt": {"map": "counts", "from": {...}}}'),
    "cutover.sink": (_mapping, "a JSON object", '{"bolt:default": {"redis_zset": "words", ...}}'),
    "state.hmac_key": (_text, "a non-empty string", "'a long random secret'"),
    "shadow.results": (_mapping, "a JSON object", '{"bolt:default": {"mode": "sum"}}'),
    "shadow.state": (_mapping, "a JSON object", '{"ignore": ["bolt.attr"]}'),
    "shadow.legacy": (_mapping, "a JSON object", '{"bolt:default": {...}}'),
    "shadow.tolerance": (_mapping, 'a JSON object {"abs": X, "rel": Y}', '{"abs": 0.01}'),
    "topology.tick.tuple.freq.secs": (_positive, "seconds > 0", "60"),
    "topology.message.timeout.secs": (_positive, "seconds > 0", "30"),
    "topology.max.spout.pending": (lambda v: _int(v) and v > 0, "an integer > 0", "1000"),
    "topology.debug": (lambda v: type(v) is bool, "true or false", "false"),
    "pystorm.log.level": (_level, "a log level (trace, debug, info, warn, error)", "info"),
}


def _kind_of(default: Any) -> tuple[Callable[[Any], bool], str] | None:
    """The kind a declared default asks for (None: any value)."""
    if type(default) is bool:
        return (lambda v: type(v) is bool), "true or false"
    if type(default) is int:
        return _int, "an integer"
    if type(default) is float:
        return _number, "a number"
    if isinstance(default, Mapping):
        return _mapping, "a JSON object"
    if isinstance(default, (list, tuple)):
        return (lambda v: isinstance(v, (list, tuple))), "a JSON list"
    return None  # a string or null default: any value


def _refuse(key: str, value: Any, expected: str, example: str) -> TopologyError:
    """The error for a bad value; a secret entry's value is not echoed (``private.py``)."""
    shown = MASK if is_secret_key(key) else mask_text(_shown(value))
    return TopologyError(f"-o {key}={shown}: expected {expected}; "
                         f"fix: -o {key}={example} (or drop the -o to keep the default)")


def _shown(value: Any) -> str:
    import json

    return value if isinstance(value, str) else json.dumps(value)


def refuse_bad_values(overrides: Mapping[str, Any], declared: Mapping[str, Any]) -> None:
    """Raise TopologyError (exit 2, one line) for the first override of the wrong kind
    (``declared``: the topology's config before the overrides)."""
    for key, value in overrides.items():
        if value is None:
            continue
        if key in OWN_KEYS:
            test, expected, example = OWN_KEYS[key]
            if not test(value):
                raise _refuse(key, value, expected, example)
        elif key in declared:
            kind = _kind_of(declared[key])
            if kind is not None and not kind[0](value):
                raise _refuse(key, value, f"{kind[1]} like its declared default",
                              _shown(declared[key]))


def unknown_key_warnings(overrides: Mapping[str, Any], known: Iterable[str],
                         source_dirs: Iterable[str] = ()) -> list[str]:
    """One warning per override key nobody declares or reads that is close to one that
    is (``known``: declared keys; the sources' ``conf.get("...")`` keys are added when a
    key is not in ``known``)."""
    known_set = {*OWN_KEYS, *known}
    unknown = [key for key in overrides if key not in known_set]
    if not unknown:
        return []
    known_set |= config_keys_read(source_dirs)
    candidates = sorted(known_set)
    warnings = []
    for key in unknown:
        if key in known_set:
            continue
        close = difflib.get_close_matches(key, candidates, n=1, cutoff=0.8)
        if close:
            warnings.append(f"-o {key}: no such config key; did you mean {close[0]}? "
                            "(kept as given)")
    return warnings


_CONF_NAMES = ("conf", "config", "stormconf", "storm_conf", "topology_conf")


def _conf_like(node: ast.AST) -> bool:
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    return isinstance(name, str) and name.lower() in _CONF_NAMES


def keys_read(tree: ast.AST) -> set[str]:
    """String keys a module reads from a Storm conf: ``conf.get("k")``, ``conf["k"]``,
    ``self.storm_conf.get("k", d)`` (any name in ``_CONF_NAMES``)."""
    keys: set[str] = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("get", "setdefault", "pop") and _conf_like(node.func.value)
                and node.args and isinstance(node.args[0], ast.Constant)):
            key = node.args[0].value
        elif isinstance(node, ast.Subscript) and _conf_like(node.value) and \
                isinstance(node.slice, ast.Constant):
            key = node.slice.value
        else:
            continue
        if isinstance(key, str):
            keys.add(key)
    return keys


def config_keys_read(source_dirs: Iterable[str], max_files: int = 2000) -> set[str]:
    """``keys_read`` over the project's Python files (unparsable files skipped: ``check``
    reports those)."""
    keys: set[str] = set()
    seen = 0
    for root in dict.fromkeys(source_dirs):
        for path in sorted(Path(root).rglob("*.py")):
            parts = path.relative_to(root).parts
            if seen >= max_files or any(p.startswith(".") or p in _SKIP for p in parts):
                continue
            seen += 1
            try:
                keys |= keys_read(ast.parse(path.read_text(encoding="utf-8")))
            except (SyntaxError, UnicodeDecodeError, OSError):
                continue
    return keys


_SKIP = {"__pycache__", "_build", "virtualenvs", "node_modules"}
