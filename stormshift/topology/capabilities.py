"""What a component can do, read once from its class at load and kept on the graph.

Engines, ``check`` and hosting decide from these facts (ticks, batching, windowed
hooks, replayable source, end of input, the emit fast path) and never inspect the
user's class again: the graph stays plain data that pickles to executors, and a
subclass of a user's bolt gets its parent's capabilities because the one pure
function here (:func:`capabilities_of`) reads them through the class's MRO.

Words:
- *hook*: an optional method the engines call when a class defines it
  (``HOOKS``: a windowed bolt's ``start_batch`` / ``batch_report``, ``end_of_input``,
  a replayable spout's ``replay_partitions``, an executor-side spout's ``resume``,
  a bolt's ``migrate_state`` ...).
- *batching*: pystorm's ``BatchingBolt`` flushes on its ``ticks_between_batches + 1``-th
  tick; a ``TicklessBatchingBolt`` every ``secs_between_batches`` seconds.
- *emit path*: which library ``emit`` the class inherits unchanged, so the host may
  bind a fast closure in its place (None: the user's own, the slow path).
- *signals end*: the spout's code can end its input (raises ``StopIteration`` or
  ``EndOfInput``, or calls ``next(it)`` without a default, which raises it).
"""

from __future__ import annotations

import ast
import enum
import inspect
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["HOOKS", "TICK_KEY", "Batching", "Capabilities", "EmitPath", "SourceKind",
           "capabilities_of"]

TICK_KEY = "topology.tick.tuple.freq.secs"
HOOKS = ("start_batch", "batch_report", "window_counters", "end_of_input", "replay_partitions",
         "replay_commit", "local_lag", "migrate_state", "resume")
_LIBRARY_ROOTS = ("pystorm", "streamparse", "builtins")


class Batching(str, enum.Enum):
    """How a bolt holds tuples back between flushes (pystorm's batching bolts)."""

    NONE = "none"
    TICKS = "ticks"  # BatchingBolt: flushes on ticks
    TICKLESS = "tickless"  # TicklessBatchingBolt: flushes every secs_between_batches


class EmitPath(str, enum.Enum):
    """The library ``emit`` a class inherits unchanged (``adapters/fastpath.py``)."""

    BOLT = "bolt"
    BATCHING = "batching"
    SPOUT = "spout"
    RELIABLE = "reliable"


class SourceKind(str, enum.Enum):
    """How the Spark engine reads a spout: by its replay offsets, or by hosting it."""

    REPLAY = "replay"  # defines replay_partitions: a range is re-read, no log
    GENERIC = "generic"  # next_tuple() hosted, its emits logged


@dataclass(frozen=True)
class Capabilities:
    """What one component can do (module doc). The defaults are a plain bolt's."""

    spout: bool = False
    hooks: frozenset[str] = frozenset()
    batching: Batching = Batching.NONE
    ticks_between_batches: int = 0  # a BatchingBolt's
    secs_between_batches: float = 0.0  # a TicklessBatchingBolt's
    tick_freq_secs: float | None = None  # topology.tick.tuple.freq.secs (component config)
    source: SourceKind | None = None  # spouts only
    reliable: bool = False  # a ReliableSpout: re-emits from fail()
    signals_end: bool = False  # spouts: its code can raise StopIteration
    emit_path: EmitPath | None = None
    fast_ack: bool = False  # ack / fail inherited from pystorm's Bolt
    fast_fail: bool = False
    # the class path these were read for (``ComponentDef`` refuses them under another
    # class: stale capabilities are a silent wrong decision, e.g. a replayable spout
    # hosted as a generic one); "" where nobody said (a class given in place of the graph's)
    read_for: str = field(default="", compare=False)

    def has(self, hook: str) -> bool:
        """Whether the class defines the engine hook ``hook`` (one of ``HOOKS``)."""
        if hook not in HOOKS:
            raise ValueError(f"{hook!r} is not an engine hook; hooks are {HOOKS}")
        return hook in self.hooks

    @property
    def windowed(self) -> bool:
        """A windowed bolt (``stormshift.windows``): ``start_batch`` and ``batch_report``."""
        return {"start_batch", "batch_report"} <= self.hooks

    @property
    def end_of_input(self) -> bool:
        return "end_of_input" in self.hooks

    @property
    def replayable(self) -> bool:
        return self.source is SourceKind.REPLAY

    @property
    def tick_interval_ms(self) -> int | None:
        """How often the bolt gets a tick: its configured tick frequency, else a
        TicklessBatchingBolt's flush interval; None for a bolt without ticks."""
        secs: float | None = self.tick_freq_secs
        if secs is None and self.batching is Batching.TICKLESS:
            secs = self.secs_between_batches
        return int(secs * 1000) if secs is not None and secs > 0 else None

    @property
    def ticks_to_flush(self) -> int:
        """Ticks the bolt needs to flush what it holds: a BatchingBolt flushes on its
        ``ticks_between_batches + 1``-th tick, any other ticking bolt on one."""
        if self.batching is Batching.TICKS:
            return self.ticks_between_batches + 1
        return 1


def capabilities_of(cls: type, config: Mapping[str, Any], *, spout: bool,
                    class_path: str = "") -> Capabilities:
    """The capabilities of component class ``cls`` with its merged ``config`` (pure: reads
    the class and its sources, changes nothing); ``class_path``: the component's class path
    as the graph names ``cls`` (kept as ``read_for``)."""
    import pystorm.bolt
    import pystorm.spout

    batching = Batching.NONE
    if issubclass(cls, pystorm.bolt.TicklessBatchingBolt):
        batching = Batching.TICKLESS
    elif issubclass(cls, pystorm.bolt.BatchingBolt):
        batching = Batching.TICKS
    secs = config.get(TICK_KEY)
    hooks = frozenset(h for h in HOOKS if callable(getattr(cls, h, None)))
    emit_path, fast_ack, fast_fail = _fast_path(cls)
    return Capabilities(
        spout=spout,
        hooks=hooks,
        batching=batching,
        ticks_between_batches=int(getattr(cls, "ticks_between_batches", 1))
        if batching is Batching.TICKS else 0,
        secs_between_batches=float(getattr(cls, "secs_between_batches", 2))
        if batching is Batching.TICKLESS else 0.0,
        tick_freq_secs=float(secs) if secs is not None else None,
        source=(SourceKind.REPLAY if "replay_partitions" in hooks else SourceKind.GENERIC)
        if spout else None,
        reliable=spout and issubclass(cls, pystorm.spout.ReliableSpout),
        signals_end=spout and _signals_end(cls),
        emit_path=emit_path,
        fast_ack=fast_ack,
        fast_fail=fast_fail,
        read_for=class_path,
    )


def _defining_class(cls: type, name: str) -> type | None:
    return next((k for k in cls.__mro__ if name in k.__dict__), None)


def _fast_path(cls: type) -> tuple[EmitPath | None, bool, bool]:
    """Which library ``emit`` / ``ack`` / ``fail`` the class keeps unchanged."""
    import pystorm.bolt
    import pystorm.component
    import pystorm.spout

    owners = {pystorm.bolt.Bolt: EmitPath.BOLT, pystorm.bolt.BatchingBolt: EmitPath.BATCHING,
              pystorm.spout.Spout: EmitPath.SPOUT, pystorm.spout.ReliableSpout: EmitPath.RELIABLE}
    emit_owner = _defining_class(cls, "emit")
    path = owners.get(emit_owner) if emit_owner is not None else None
    if _defining_class(cls, "send_message") is not pystorm.component.Component:
        path = None
    return (path, _defining_class(cls, "ack") is pystorm.bolt.Bolt,
            _defining_class(cls, "fail") is pystorm.bolt.Bolt)


def _signals_end(cls: type) -> bool:
    """Whether a class body of ``cls``'s MRO (libraries aside) raises StopIteration /
    EndOfInput or calls ``next(x)`` without a default. A class whose source cannot be
    read counts as able to: only a spout shown unable is reported as such."""
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] in _LIBRARY_ROOTS:
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            return True
        if any(_ends(node) for node in ast.walk(tree)):
            return True
    return False


def _ends(node: ast.AST) -> bool:
    if isinstance(node, ast.Raise) and node.exc is not None:
        exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        name = exc.attr if isinstance(exc, ast.Attribute) else getattr(exc, "id", "")
        return name in ("StopIteration", "EndOfInput")
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "next" and len(node.args) == 1)
