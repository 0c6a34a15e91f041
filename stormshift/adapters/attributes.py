"""Which attributes of a hosted user component are its state.

The state of an unchanged streamparse bolt is its instance attributes (a
word-count bolt's ``Counter``), minus what pystorm, streamparse or the host
set on it, and minus what ``initialize()`` re-makes (functions, modules,
connections: anything that cannot be pickled).

The framework's names are read off the framework's own classes rather than
kept by hand: a bare instance of each pystorm/streamparse base class, built
and set up the way the host builds a user's (``construct.py``), has exactly
the attributes pystorm gives every subclass. Two kinds:

- ``FRAMEWORK_ATTRS``: never state (pipes, locks, logger, conf, context, the
  host's fast paths); snapshots and final states leave them out;
- ``FRAMEWORK_PROGRESS``: pystorm's batching progress (a ``BatchingBolt``'s
  pending groups and tick counter). Snapshots keep it, so a restored task
  flushes at the same tick as the first attempt; but it is not the user's
  state, so the final state a shadow compares leaves it out
  (``is_user_attribute``).
"""

from __future__ import annotations

import ast
import inspect
import pickle
import textwrap
import types
from functools import cache
from typing import Any

__all__ = ["FRAMEWORK_ATTRS", "FRAMEWORK_PROGRESS", "framework_attributes", "is_user_attribute",
           "names_in_code", "user_attributes"]

#: set at run time, never by a constructor: pystorm's run loop, the host's emit paths,
#: and class-level switches a user may copy onto the instance
_RUNTIME = frozenset({
    "input_stream", "output_stream", "_current_tups", "auto_ack", "auto_anchor", "auto_fail",
    "emit", "ack", "fail", "send_message",
})
#: pystorm's batching progress: snapshotted, never compared (module docstring)
FRAMEWORK_PROGRESS = frozenset({"_batches", "_tick_counter"})


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
_NOT_STATE = (types.FunctionType, types.MethodType, types.BuiltinFunctionType, types.ModuleType)


def is_user_attribute(name: str) -> bool:
    """Whether an attribute of that name can be the user's state (neither the framework's
    nor stormshift's own ``_stormshift*``)."""
    return not (name in FRAMEWORK_ATTRS or name in FRAMEWORK_PROGRESS
                or name.startswith("_stormshift"))


def user_attributes(instance: Any) -> dict[str, Any]:
    """The picklable user attributes of ``instance``, by name, sorted (live objects)."""
    attrs = vars(instance)
    state: dict[str, Any] = {}
    for name in sorted(attrs):
        if not is_user_attribute(name):
            continue
        value = attrs[name]
        if isinstance(value, _NOT_STATE) or callable(value) and not hasattr(value, "__dict__"):
            continue
        if _picklable(value):  # unpicklable means "re-made by initialize()"
            state[name] = value
    return state


def _picklable(value: Any) -> bool:
    try:
        pickle.dumps(value)
    except Exception:  # noqa: BLE001 - any pickling error means "not state"
        return False
    return True


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
