"""Which attributes of a hosted user component are its state: the one definition.

The state of an unchanged streamparse bolt is its instance attributes (a word-count
bolt's ``Counter``), minus three kinds, in this order:

1. the framework's: what pystorm, streamparse or the host set on every instance
   (pipes, locks, logger, conf, context, the host's fast paths: ``FRAMEWORK_ATTRS``)
   and stormshift's own ``_stormshift*``;
2. code: functions, bound methods, modules, and callables with no ``__dict__``;
3. what cannot be pickled (a Redis client, an open file, a socket): not state, it is
   re-made by ``initialize()`` on every build. ``unpicklable`` says which, and whether
   it holds a position (an iterator, a file) whose loss is more than a reconnect.

An attribute a bolt makes lazily (first set in ``process()``) is state from the first
snapshot after it appears. The framework's names are read off the framework's own
classes, not kept by hand: a bare instance of each pystorm/streamparse base class,
built and set up the way the host builds a user's (``adapters/construct.py``), has
exactly the attributes pystorm gives every subclass. ``FRAMEWORK_PROGRESS``
(a ``BatchingBolt``'s pending groups and tick counter) is snapshotted, so a restored
task flushes at the same tick as the first attempt, but it is not the user's state:
final states leave it out (``user_state``, ``is_user_attribute``).
"""

from __future__ import annotations

import ast
import inspect
import io
import textwrap
import types
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from stormshift.state.component.pickler import picklable, pickle_error
from stormshift.state.keyed import is_keyed

__all__ = ["FRAMEWORK_ATTRS", "FRAMEWORK_PROGRESS", "Unpicklable", "candidates",
           "framework_attributes", "is_user_attribute", "may_be_state", "names_in_code", "state_of",
           "unpicklable", "user_state"]

#: set at run time, never by a constructor: pystorm's run loop, the host's emit paths,
#: and class-level switches a user may copy onto the instance
_RUNTIME = frozenset({
    "input_stream", "output_stream", "_current_tups", "auto_ack", "auto_anchor", "auto_fail",
    "emit", "ack", "fail", "send_message",
})
#: pystorm's batching progress: snapshotted, never compared (module docstring)
FRAMEWORK_PROGRESS = frozenset({"_batches", "_tick_counter"})
_CODE = (types.FunctionType, types.MethodType, types.BuiltinFunctionType, types.ModuleType)


@cache
def framework_attributes() -> frozenset[str]:
    """Every attribute a bare pystorm/streamparse Bolt, BatchingBolt, TicklessBatchingBolt
    and Spout has once built and set up by the host (module docstring)."""
    import streamparse

    from stormshift.adapters.construct import construct, setup_instance

    names: set[str] = set()
    for cls in (streamparse.Bolt, streamparse.BatchingBolt, streamparse.TicklessBatchingBolt,
                streamparse.Spout):
        instance = construct(cls, "framework", tickless=cls is streamparse.TicklessBatchingBolt)
        setup_instance(instance, "framework", {}, {"taskid": 0}, [], {})
        names.update(vars(instance))
    return frozenset(names)


FRAMEWORK_ATTRS = (framework_attributes() | _RUNTIME) - FRAMEWORK_PROGRESS


def may_be_state(name: str) -> bool:
    """Not kind 1 of the module doc (the framework's, stormshift's own): an attribute of
    that name is state if its value is (the batching progress may be)."""
    return not (name in FRAMEWORK_ATTRS or name.startswith("_stormshift"))


def is_user_attribute(name: str) -> bool:
    """Whether an attribute of that name can be the user's state (neither the framework's,
    its batching progress, nor stormshift's own)."""
    return may_be_state(name) and name not in FRAMEWORK_PROGRESS


def candidates(instance: Any) -> dict[str, Any]:
    """Kinds 1 and 2 left out: the attributes that are state if they pickle, by name, sorted."""
    out: dict[str, Any] = {}
    attrs = vars(instance)
    for name in sorted(attrs):
        if not may_be_state(name):
            continue
        value = attrs[name]
        if isinstance(value, _CODE) or callable(value) and not hasattr(value, "__dict__"):
            continue
        out[name] = value
    return out


def state_of(instance: Any, known: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The state attributes of ``instance`` (module doc), by name, sorted. ``known``: name
    -> object already known to pickle (a ``Snapshotter``'s tracked dicts: their keys are
    pickled as they change, not tried whole every batch); keyed objects count as
    picklable (they are stored by their entries)."""
    known = known or {}
    return {name: value for name, value in candidates(instance).items()
            if known.get(name) is value or is_keyed(value) or picklable(value)}


def user_state(instance: Any) -> dict[str, Any]:
    """``state_of`` without the framework's batching progress: what a final state holds
    (the local engine's, the one a shadow compares) and what a fresh instance of new code
    is compared with (``driver/upgrade.py``)."""
    return {n: v for n, v in state_of(instance).items() if n not in FRAMEWORK_PROGRESS}


@dataclass(frozen=True)
class Unpicklable:
    """An attribute left out of the state because it cannot be pickled (kind 3)."""

    attr: str
    type_name: str
    error: str
    holds_position: bool  # an iterator or open file: its position is lost, not just re-made


def unpicklable(instance: Any) -> list[Unpicklable]:
    """The attributes ``state_of`` leaves out only because they cannot be pickled."""
    out = []
    for name, value in candidates(instance).items():
        if is_keyed(value):
            continue
        exc = pickle_error(value)
        if exc is not None:
            position = hasattr(value, "__next__") or isinstance(value, io.IOBase)
            out.append(Unpicklable(name, type(value).__qualname__, str(exc)[:120], position))
    return out


def names_in_code(cls: type) -> frozenset[str] | None:
    """Every ``self.NAME`` the source of ``cls`` and its bases mentions (read or written):
    the attributes the code still uses, even those made outside ``initialize()``; None
    when the source of ``cls`` itself cannot be read (then no name can be said unused)."""
    names: set[str] = set()
    for klass in cls.__mro__:
        if klass is object:
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):  # no source (builtins, C): names unknown
            if klass is cls:
                return None
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id == "self":
                names.add(node.attr)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id in ("setattr", "getattr") and len(node.args) >= 2 \
                    and isinstance(node.args[1], ast.Constant) \
                    and isinstance(node.args[1].value, str):
                names.add(node.args[1].value)
    return frozenset(names)
