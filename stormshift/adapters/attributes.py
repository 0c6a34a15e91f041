"""Which attributes of a hosted user component are its state.

The state of an unchanged streamparse bolt is its instance attributes (a
word-count bolt's ``Counter``), minus what pystorm or the host set on it
(pipes, locks, logger, conf, context, the host's fast paths) and minus what
``initialize()`` re-makes (functions, modules, connections: anything that
cannot be pickled). The local engine reports these as a run's final state;
the Spark engine's snapshots cut the same set (``engines/spark/task/taskstate.py``
keeps its own copy of ``FRAMEWORK_ATTRS`` with cloudpickle's picklability).
"""

from __future__ import annotations

import ast
import inspect
import pickle
import textwrap
import types
from typing import Any

__all__ = ["FRAMEWORK_ATTRS", "names_in_code", "user_attributes"]

# Set by pystorm's Component/Bolt/BatchingBolt constructors or by the host.
FRAMEWORK_ATTRS = frozenset(
    {
        "input_stream", "output_stream", "topology_name", "task_id", "component_name",
        "debug", "storm_conf", "context", "pid", "logger", "serializer",
        "_pending_commands", "_pending_task_ids", "_reader_lock", "_writer_lock",
        "_source_tuple_types", "_current_tups", "_current_key", "exc_info",
        "_batch_lock", "_batcher", "auto_ack", "auto_anchor", "auto_fail",
        "emit", "ack", "fail", "send_message",
    }
)
_NOT_STATE = (types.FunctionType, types.MethodType, types.BuiltinFunctionType, types.ModuleType)


def user_attributes(instance: Any) -> dict[str, Any]:
    """The picklable user attributes of ``instance``, by name, sorted (live objects)."""
    attrs = vars(instance)
    state: dict[str, Any] = {}
    for name in sorted(attrs):
        if name in FRAMEWORK_ATTRS or name.startswith("_stormshift"):
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
