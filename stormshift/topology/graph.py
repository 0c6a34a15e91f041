"""The immutable topology graph every engine runs.

Engines never touch streamparse objects: the loader copies a streamparse
``Topology`` into these frozen dataclasses once, validates it, and from then
on the graph is plain data (picklable, so Spark executors can receive it).

Vocabulary:
- *component*: a spout or bolt declared in the topology, with ``par`` tasks.
- *task index*: 0 .. par-1 within a component (Spark partition = task index).
- *task id*: Storm's global task number, unique across the topology. As in
  Storm, ids are assigned in component-name order starting at 1, so the
  ``context`` a component sees is the one Storm would build.
- *stream*: a named output of a component with declared fields.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from stormshift.errors import TopologyError
from stormshift.topology.capabilities import Capabilities


class GroupingKind(str, enum.Enum):
    """How a consumer's tasks share a stream (Storm's groupings)."""

    FIELDS = "fields"
    SHUFFLE = "shuffle"
    GLOBAL = "global"
    ALL = "all"
    NONE = "none"
    DIRECT = "direct"
    LOCAL_OR_SHUFFLE = "local_or_shuffle"


@dataclass(frozen=True)
class Grouping:
    """A decoded grouping. ``fields`` is non-empty only for FIELDS."""

    kind: GroupingKind
    fields: tuple[str, ...] = ()

    def __str__(self) -> str:
        if self.kind is GroupingKind.FIELDS:
            return f"fields({', '.join(self.fields)})"
        return self.kind.value


@dataclass(frozen=True)
class StreamDef:
    """One declared output stream of a component."""

    name: str
    fields: tuple[str, ...]
    direct: bool = False


@dataclass(frozen=True)
class InputDef:
    """A subscription of a bolt to ``source``'s ``stream`` with a grouping."""

    source: str
    stream: str
    grouping: Grouping


class ComponentKind(str, enum.Enum):
    SPOUT = "spout"
    BOLT = "bolt"


@dataclass(frozen=True)
class ComponentDef:
    """One component of the topology.

    ``class_path`` is ``"module.ClassName"`` of the Python class that runs the
    component (for a JavaSpout replaced through config, the Python
    replacement); ``replaces`` names the Java class it stands in for, and
    ``translated`` maps each config key the replacement took from the Java
    declaration to where it came from (``args_list[1]``, ``config 'group.id'``).
    ``config`` is the topology config overlaid with the component's own
    config (component wins), as Storm merges them. ``capabilities`` is what the
    class can do (ticks, batching, hooks, replay), read once at load
    (``capabilities.py``): nothing after the loader inspects the class. So a
    component whose ``class_path`` changes must have its capabilities read again
    (``loader.with_class``): capabilities read for another class path are refused,
    as the engines would decide from the old class's (a replayable spout put in a
    generic spout's place would be hosted and logged, not replayed).
    """

    name: str
    kind: ComponentKind
    class_path: str
    par: int
    config: Mapping[str, Any]
    outputs: Mapping[str, StreamDef]
    inputs: tuple[InputDef, ...] = ()
    first_task_id: int = 1
    replaces: str | None = None
    translated: Mapping[str, str] = field(default_factory=dict)
    capabilities: Capabilities = field(default_factory=Capabilities)

    def __post_init__(self) -> None:
        read_for = self.capabilities.read_for
        if read_for and read_for != self.class_path:
            raise TopologyError(
                f"its capabilities were read from class {read_for}, but its class is "
                f"{self.class_path}: the engines would run it as the other class says "
                "(how it is read, ticked and hosted)",
                component=self.name,
                fix="change a component's class with stormshift.topology.loader.with_class "
                    "(it reads the new class's capabilities), not dataclasses.replace",
            )

    @property
    def task_ids(self) -> tuple[int, ...]:
        return tuple(range(self.first_task_id, self.first_task_id + self.par))

    def task_id(self, task_index: int) -> int:
        if not 0 <= task_index < self.par:
            raise IndexError(f"{self.name}: task index {task_index} not in 0..{self.par - 1}")
        return self.first_task_id + task_index

    def task_index(self, task_id: int) -> int:
        index = task_id - self.first_task_id
        if not 0 <= index < self.par:
            raise ValueError(
                f"task id {task_id} is not a task of {self.name!r} "
                f"(its tasks are {list(self.task_ids)})"
            )
        return index

    @property
    def is_spout(self) -> bool:
        return self.kind is ComponentKind.SPOUT


@dataclass(frozen=True)
class Subscription:
    """A consumer of one (source, stream): who gets the tuples, and how."""

    consumer: str
    grouping: Grouping
    par: int
    first_task_id: int


@dataclass(frozen=True)
class TopologyGraph:
    """A whole topology: components in topological order, plus config.

    ``project_dir`` is the streamparse project the topology came from (None
    for a class loaded directly); ``source_dirs`` are the directories that
    must be on ``sys.path`` to import the components (shipped to executors).
    ``working_dir`` is the directory components run in, as Storm would give
    them (the project's ``src/`` if it has one). ``warnings`` are what loading
    noticed for the user (a ``-o`` key close to a known one: ``overrides.py``).
    """

    name: str
    components: Mapping[str, ComponentDef]
    config: Mapping[str, Any] = field(default_factory=lambda: FrozenDict())
    project_dir: str | None = None
    source_dirs: tuple[str, ...] = ()
    working_dir: str | None = None
    environment: str | None = None
    warnings: tuple[str, ...] = field(default=(), compare=False)

    # -- lookups -------------------------------------------------------
    def component(self, name: str) -> ComponentDef:
        try:
            return self.components[name]
        except KeyError:
            raise KeyError(
                f"no component {name!r} in topology {self.name!r}; "
                f"components are {sorted(self.components)}"
            ) from None

    @property
    def spouts(self) -> tuple[ComponentDef, ...]:
        return tuple(c for c in self.components.values() if c.is_spout)

    @property
    def bolts(self) -> tuple[ComponentDef, ...]:
        return tuple(c for c in self.components.values() if not c.is_spout)

    def __iter__(self) -> Iterator[ComponentDef]:
        """Components in topological order (sources before consumers)."""
        return iter(self.components.values())

    def subscriptions(self, source: str, stream: str) -> tuple[Subscription, ...]:
        """Consumers of ``source``'s ``stream``, in topological order."""
        return tuple(
            Subscription(c.name, i.grouping, c.par, c.first_task_id)
            for c in self.components.values()
            for i in c.inputs
            if i.source == source and i.stream == stream
        )

    def consumers(self, source: str) -> tuple[str, ...]:
        """Names of components reading any stream of ``source``."""
        return tuple(
            c.name for c in self.components.values() if any(i.source == source for i in c.inputs)
        )

    def task_to_component(self) -> dict[int, str]:
        return {tid: c.name for c in self.components.values() for tid in c.task_ids}

    def stream_fields(self, source: str, stream: str) -> tuple[str, ...]:
        return self.component(source).outputs[stream].fields

    @property
    def total_tasks(self) -> int:
        return sum(c.par for c in self.components.values())

    def wiring(self) -> str:
        """Every component's class, par, task ids and subscriptions, as one string: what a
        cache of live instances must match (a task of a rescaled component holds other
        keys; another par moves task ids)."""
        return repr([(c.name, c.class_path, c.par, c.first_task_id,
                      [(i.source, i.stream, str(i.grouping)) for i in c.inputs])
                     for c in self.components.values()])


class FrozenDict(dict):  # type: ignore[type-arg]
    """A dict that refuses mutation but still pickles (MappingProxyType does not)."""

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("topology graph data is immutable")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))

    def __hash__(self) -> int:  # type: ignore[override]
        return id(self)


def freeze(mapping: Mapping[str, Any]) -> FrozenDict:
    """A read-only copy of a plain dict (config values stay JSON data)."""
    return FrozenDict(mapping)
