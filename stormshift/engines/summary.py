"""What a run did, per component: the numbers both engines report.

Shared by the local (Storm-semantics) engine and the Spark engine so the CLI,
shadow runs and tests read one shape. Vocabulary (the first five are
``metrics/counts.py``'s ``TupleCounts``, which every record of a run carries):

- *tuples_in*: data tuples a bolt executed (ticks not counted).
- *tuples_out*: tuples a component emitted (one per ``emit`` call, whatever
  the number of target tasks).
- *acks* / *fails*: for a spout, ``ack(msg_id)`` / ``fail(msg_id)`` calls it
  received (tree complete / tree failed or timed out); for a bolt, the input
  tuples it acked / failed.
- *timeouts*: spout trees that failed because ``topology.message.timeout.secs``
  passed (included in *fails*).
- *replays*: spout emits of a ``msg_id`` that spout task had emitted before.
- *duplicates*: tuples a bolt executed that it had already executed in an
  earlier attempt of the same spout tuple (same lineage) -- Storm's
  at-least-once double counting, made visible.
- *restarts*: task instances re-created after a crash (in-memory state lost).
- *dead_lettered*: tuples sent to the dead-letter store (bolts: Spark engine only,
  Storm has none); ``dead_letter_reasons`` counts them per component and reason
  (``raised``, ``arity``, ``emit``, ``encode``, ``fail``: see the retry policy
  in ``adapters/retry_policy.py``; spouts: ``decode``, ``value``).
- *records_read* (built-in spouts, both engines): source records the spout read:
  each became a new tuple or was dead-lettered at the spout (``decode`` /
  ``value``: ``spouts/values.py``), on both engines alike; the records themselves
  are in ``spout_dead_letters`` (Spark: also the namespace's dead-letter stream).
- *unread* (built-in spouts): records still in a bounded source when the run said
  its input was done: the accounting does not hold then (``accounting.py``).
- *redriven*: dead letters replayed into a bolt (``stormshift deadletter replay``).
- *lost* (local engine, bolts): tuples that were queued for a task when it crashed
  (Storm drops a dead worker's queue; their trees time out and replay).
- *logs_dropped* (Spark engine): ``self.logger`` lines past
  ``stormshift.logs.max_lines_per_task`` per task per batch, not forwarded
  (``engines/logs.py``); a warning names the option.
- *in_flight* (bolts): tuples a task was executing when the run was stopped
  (Ctrl-C, SIGTERM): neither acked nor failed, and not a gap in the accounting.
- *gave_up* (local engine, spouts): failed spout tuples the engine stopped replaying
  after ``stormshift.max_replays`` failures (Storm replays forever; a bounded run
  must end): each counted here, never silently.

``problems`` holds the distinct errors per component (``problems.py``), shown
first by the CLI; ``warnings`` what the run noticed (a spout that never signalled
end of input, a batch whose tuples all failed); ``log_file`` where components'
``self.logger`` lines went.

``accounting()`` checks that every tuple is accounted for (``accounting.py``).
- *windows* (windowed bolts, both engines): input tuples ``on_time``,
  ``late_updated`` (updated a window within its allowed lateness),
  ``dropped_late`` (too late for every window), ``late_stream`` (of those, sent
  to the late-tuple stream); empty for other components.
- *reused*, *caught_up*, *restored*, *started* (Spark engine, bolts): tasks run whose
  state was the live instance as it was, brought up to date by the deltas since its
  version, rebuilt from Redis, or built with no stored state (a first run);
  *idle_batches*: batches whose stage was provably idle and ran no task (``state_table``).
- *complete_latency_ms* (spouts): mean engine time from a spout emit to its
  tree's completion, as Storm's UI reports it (0 when not measured).

``outputs`` keeps what leaf streams (streams nobody subscribes to) emitted,
in emit order, so the CLI can show final results and tests can compare;
``sink`` says where the engine wrote them (``jsonl:DIR`` / ``redis:STREAM``, as
``--sink`` takes it; None: kept in memory only, or dropped).
``final_state`` (per bolt, when the engine was asked for it: shadow runs)
holds what the bolt's tasks kept at the end: each task's user attributes
(``state/component/attributes.py``) and the bolt's keyed state maps by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from stormshift.engines.problems import ErrorDigest
from stormshift.metrics.counts import TupleCounts
from stormshift.topology.graph import TopologyGraph

__all__ = ["ComponentState", "ComponentStats", "RunSummary"]

_COLUMNS = (
    "tuples_in",
    "tuples_out",
    "acks",
    "fails",
    "timeouts",
    "errors",
    "dead_lettered",
    "redriven",
    "replays",
    "duplicates",
    "restarts",
    "lost",
    "gave_up",
    "in_flight",
    "logs_dropped",
)
_ALWAYS = ("tuples_in", "tuples_out", "acks", "fails")
_HEADERS = {"tuples_in": "in", "tuples_out": "out", "dead_lettered": "dead-lettered",
            "in_flight": "in flight", "logs_dropped": "logs dropped"}


@dataclass
class ComponentStats(TupleCounts):
    """Counters of one component, summed over its tasks: its ``TupleCounts`` and the
    summary's own (module doc)."""

    name: str
    kind: str
    par: int
    timeouts: int = 0
    errors: int = 0
    redriven: int = 0
    replays: int = 0
    duplicates: int = 0
    restarts: int = 0
    lost: int = 0
    gave_up: int = 0
    logs_dropped: int = 0  # Spark: log lines past stormshift.logs.max_lines_per_task
    in_flight: int = 0  # bolts: tuples inside a call when the run was stopped (accounting)
    records_read: int = 0  # built-in spouts: records read = new tuples + dead-lettered here
    unread: int = 0  # built-in spouts: records left in a bounded source at "done"
    received: int = 0  # local engine: deliveries queued for the bolt's tasks (accounting)
    queued: int = 0  # local engine: of those, still queued when the run ended
    busy_ms: float = 0.0
    idle_batches: int = 0  # Spark engine: batches whose stage was provably idle, no task ran
    # Spark engine, bolt tasks run: with the live instance as it was / brought up to date by
    # the deltas since its version / rebuilt from Redis / built with no stored state (a
    # first run) (``task/taskstate.py`` step 2)
    reused: int = 0
    caught_up: int = 0
    restored: int = 0
    started: int = 0
    completed_trees: int = 0
    complete_latency_total_ms: int = 0
    windows: dict[str, int] = field(default_factory=dict)  # windowed bolts (see module doc)

    @property
    def complete_latency_ms(self) -> float:
        return (
            self.complete_latency_total_ms / self.completed_trees if self.completed_trees else 0.0
        )

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out = {"name": out.pop("name"), "kind": out.pop("kind"), "par": out.pop("par"), **out}
        out["complete_latency_ms"] = round(self.complete_latency_ms, 3)
        return out


@dataclass
class ComponentState:
    """The final state of one bolt: ``tasks[i]`` is task *i*'s user attributes by name
    (the local engine's live instances, the Spark engine's last committed snapshot);
    ``maps`` its keyed state maps, name -> key -> value (Spark: as committed in Redis; local
    engine: held in memory, ``engines/local/maps.py``)."""

    tasks: list[dict[str, Any]] = field(default_factory=list)
    maps: dict[str, dict[Any, Any]] = field(default_factory=dict)


@dataclass
class RunSummary:
    """The result of one run (or the live state of a running one)."""

    topology: str
    engine: str
    components: dict[str, ComponentStats]
    elapsed_ms: float = 0.0
    engine_time_ms: int = 0
    stop_reason: str = "running"
    spout_tuples: int = 0
    pending_trees: int = 0
    outputs: dict[tuple[str, str], list[list[Any]]] = field(default_factory=dict)
    error_messages: list[str] = field(default_factory=list)
    dead_letter_reasons: dict[str, dict[str, int]] = field(default_factory=dict)
    first_hop: dict[str, Any] = field(default_factory=dict)  # accounting.first_hop(graph)
    problems: ErrorDigest = field(default_factory=ErrorDigest)
    warnings: list[str] = field(default_factory=list)
    log_file: str | None = None
    final_state: dict[str, ComponentState] = field(default_factory=dict)
    sink: str | None = None
    # records a built-in spout dead-lettered, in the order read: component, task, reason,
    # position (file:line, stream:id, topic/partition:offset), values (the raw record), error
    spout_dead_letters: list[dict[str, Any]] = field(default_factory=list)

    def add_spout_dead_letter(self, component: str, task: int | None, reason: str,
                              position: str, values: Any, error: str) -> None:
        """One record a spout dead-lettered: counted for the spout by reason, kept."""
        stats = self.components.get(component)
        if stats is not None:
            stats.dead_lettered += 1
        mine = self.dead_letter_reasons.setdefault(component, {})
        mine[reason] = mine.get(reason, 0) + 1
        self.spout_dead_letters.append({"component": component, "task": task, "reason": reason,
                                        "position": position, "values": values, "error": error})

    def warn(self, message: str) -> None:
        """Record a warning once (the CLI prints warnings as they come and in the summary)."""
        if message not in self.warnings:
            self.warnings.append(message)

    @classmethod
    def for_graph(cls, graph: TopologyGraph, engine: str) -> RunSummary:
        """Empty counters for every component of ``graph`` (topological order)."""
        from stormshift.engines.accounting import first_hop

        stats = {c.name: ComponentStats(c.name, c.kind.value, c.par) for c in graph}
        return cls(topology=graph.name, engine=engine, components=stats, first_hop=first_hop(graph))

    def accounting(self) -> dict[str, Any]:
        """Per bolt: in, acked, failed, dead-lettered, and whether in == acked + dead-lettered;
        topology: spout tuples vs first-hop bolt inputs (``accounting.py``)."""
        from stormshift.engines.accounting import accounting

        return accounting(self)

    # -- reading results ----------------------------------------------------
    def __getitem__(self, component: str) -> ComponentStats:
        try:
            return self.components[component]
        except KeyError:
            raise KeyError(
                f"no component {component!r} in this run; components are {sorted(self.components)}"
            ) from None

    def total(self, column: str) -> int:
        """Sum of one counter over all components (e.g. ``total("duplicates")``)."""
        if column not in _COLUMNS:
            raise KeyError(f"unknown counter {column!r}; counters are {list(_COLUMNS)}")
        return sum(getattr(s, column) for s in self.components.values())

    def output(self, component: str, stream: str = "default") -> list[list[Any]]:
        """Values a leaf stream emitted, in emit order (empty if none)."""
        return self.outputs.get((component, stream), [])

    def latest(
        self, component: str, stream: str = "default", key_len: int = 1
    ) -> dict[Any, list[Any]]:
        """Last emitted values per key (the first ``key_len`` fields) of a leaf stream.

        A word-count leaf emitting ``[word, count]`` gives ``{word: [word, count]}``
        holding each word's final count.
        """
        latest: dict[Any, list[Any]] = {}
        for values in self.output(component, stream):
            key = values[0] if key_len == 1 else tuple(values[:key_len])
            latest[key] = values
        return latest

    # -- rendering ----------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``--json`` output of the CLI)."""
        return {
            "topology": self.topology,
            "engine": self.engine,
            "elapsed_ms": round(self.elapsed_ms, 3),
            "engine_time_ms": self.engine_time_ms,
            "stop_reason": self.stop_reason,
            "spout_tuples": self.spout_tuples,
            "pending_trees": self.pending_trees,
            "components": {n: s.to_dict() for n, s in self.components.items()},
            "outputs": {f"{c}:{s}": len(v) for (c, s), v in self.outputs.items()},
            "errors": list(self.error_messages),
            "error_kinds": self.problems.to_list(),
            "warnings": list(self.warnings),
            "log_file": self.log_file,
            "sink": self.sink,
            "dead_letter_reasons": {c: dict(r) for c, r in self.dead_letter_reasons.items()},
            "spout_dead_letters": [dict(d) for d in self.spout_dead_letters],
            "accounting": self.accounting(),
        }

    def table(self, columns: Sequence[str] | None = None) -> Any:
        """A ``rich.table.Table``, one row per component.

        By default: tuples in/out, acks and fails always, the other counters
        only when some component has a non-zero value (narrow terminals).
        """
        from rich.table import Table

        from stormshift.display import cell

        if columns is None:
            columns = [c for c in _COLUMNS if c in _ALWAYS or self.total(c)]
        title = (
            f"{self.topology} on {self.engine}: {self.stop_reason}, "
            f"{self.spout_tuples} spout tuples, {self.elapsed_ms / 1000:.2f}s"
        )
        # fits the console (80 columns too): cells wrap or fold, never cut; the title is not
        # squeezed into a narrow table's width
        table = Table(title=title, min_width=len(title) + 2)
        table.add_column("component", overflow="fold")
        table.add_column("kind", overflow="fold")
        table.add_column("par", justify="right", overflow="fold")
        for column in columns:
            table.add_column(_HEADERS.get(column, column), justify="right", overflow="fold")
        for stats in self.components.values():
            table.add_row(
                cell(stats.name), stats.kind, str(stats.par),
                *(str(getattr(stats, c)) for c in columns),
            )
        return table

    def window_table(self) -> Any:
        """A ``rich.table.Table`` of the windowed bolts' input tuples by lateness (``windows``
        in the module doc), or None when the topology has no windowed bolt."""
        from rich.table import Table

        from stormshift.display import cell
        from stormshift.windows.state import WINDOW_COUNTERS

        windowed = [s for s in self.components.values() if s.windows]
        if not windowed:
            return None
        table = Table(title="windowed bolts: input tuples by event time")
        table.add_column("component", overflow="fold")
        for column in WINDOW_COUNTERS:
            table.add_column(column.replace("_", " "), justify="right", overflow="fold")
        for stats in windowed:
            table.add_row(cell(stats.name), *(str(stats.windows.get(c, 0)) for c in WINDOW_COUNTERS))
        return table

    def state_table(self) -> Any:
        """A ``rich.table.Table`` of how the Spark engine's bolt tasks found their state
        (``reused`` live, ``caught up``, ``restored`` from Redis, ``started`` with none
        stored) and the batches their stage was idle; None when no bolt task ran on Spark.
        A restore or catch-up after a bolt's first batch means its live instance was not
        where its task ran (``engines/spark/task/task_host.py``)."""
        from rich.table import Table

        from stormshift.display import cell

        ran = [s for s in self.components.values()
               if s.reused + s.caught_up + s.restored + s.started]
        if not ran:
            return None
        table = Table(title="bolt tasks run, by where their state came from")
        table.add_column("component", overflow="fold")
        for column in ("reused", "caught up", "restored", "started", "idle batches"):
            table.add_column(column, justify="right", overflow="fold")
        for stats in ran:
            table.add_row(cell(stats.name), *(str(n) for n in (
                stats.reused, stats.caught_up, stats.restored, stats.started, stats.idle_batches)))
        return table

    def progress_line(self) -> str:
        """One line for a live progress display."""
        return (
            f"{self.spout_tuples} spout tuples, pending {self.pending_trees}, "
            f"acks {sum(s.acks for s in self.components.values() if s.kind == 'spout')}, "
            f"fails {sum(s.fails for s in self.components.values() if s.kind == 'spout')}, "
            f"engine time {self.engine_time_ms / 1000:.1f}s"
        )
