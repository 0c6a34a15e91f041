"""Unit-test a bolt in milliseconds: no Spark, no Storm, no Redis server.

    from stormshift.testing import run_bolt

    run = run_bolt(WordCountBolt, [["cow"], ["moon"], ["cow"]], fields=["word"])
    assert run.values() == [["cow", 1], ["moon", 1], ["cow", 2]]
    assert run.state == {}                       # a legacy bolt: no state maps
    assert run.instance.counts["cow"] == 2       # its in-memory attributes

A bolt that uses ``stormshift.state`` maps gets them backed by fakeredis
(with the same Lua scripts as production), so ``run.state`` shows what it
would have stored: ``{"ctr": {"ad-1": 3}}``. Tuples run in batches of
``batch_size`` (one txid each, like Spark micro-batches); ``replay=True``
runs each batch twice (a crashed attempt, then its retry) to check that the
bolt's map state is still exact.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from streamparse import Spout

from stormshift.adapters.host import BoltHost
from stormshift.errors import ComponentFailure
from stormshift.state.commit import CommitLog
from stormshift.state.fencing import acquire_epoch
from stormshift.state.inspect import map_items, map_kinds
from stormshift.state.scope import TaskScope
from stormshift.topology.capabilities import capabilities_of
from stormshift.topology.graph import (
    ComponentDef,
    ComponentKind,
    Grouping,
    GroupingKind,
    InputDef,
    StreamDef,
    TopologyGraph,
    freeze,
)
from stormshift.topology.specs import outputs_from_class

__all__ = ["BoltRun", "Emitted", "InputSpout", "run_bolt"]


class InputSpout(Spout):
    """Stands for the bolt's upstream in the one-bolt test topology (never run)."""

    outputs: ClassVar[list[Any]] = []

    def next_tuple(self) -> None:
        raise StopIteration


@dataclass
class Emitted:
    """One tuple the bolt emitted: stream, values and the ids of its anchors."""

    stream: str
    values: list[Any]
    anchors: tuple[str, ...] = ()


@dataclass
class BoltRun:
    """Everything one ``run_bolt`` call observed."""

    emits: list[Emitted] = field(default_factory=list)
    acks: list[Any] = field(default_factory=list)
    fails: list[Any] = field(default_factory=list)
    failures: list[ComponentFailure] = field(default_factory=list)
    logs: list[tuple[str, str]] = field(default_factory=list)
    state: dict[str, dict[Any, Any]] = field(default_factory=dict)
    instance: Any = None
    redis: Any = None
    tuple_ids: list[str] = field(default_factory=list)

    def values(self, stream: str = "default") -> list[list[Any]]:
        """Values of the tuples emitted on ``stream``, in order."""
        return [e.values for e in self.emits if e.stream == stream]


def _fake_redis() -> Any:
    try:
        import fakeredis
        import lupa  # noqa: F401  (fakeredis runs Lua scripts with it)
    except ImportError as e:
        raise ImportError(
            f"stormshift.testing needs fakeredis with Lua support ({e}); "
            "fix: pip install 'fakeredis[lua]' (or pass redis= a real client)"
        ) from None
    return fakeredis.FakeRedis()


def _graph(bolt_class: type, name: str, source: str, stream: str, fields: Sequence[str],
           par: int, config: Mapping[str, Any]) -> TopologyGraph:
    """A two-component topology: ``source`` feeding ``name`` (shuffle), task ids in name order."""
    first = {n: 1 for n in (source, name)}
    if source < name:
        first[name] = 2
    else:
        first[source] = 1 + par
    spout_path, bolt_path = f"{__name__}.InputSpout", f"{bolt_class.__module__}.{bolt_class.__qualname__}"
    spout = ComponentDef(
        name=source, kind=ComponentKind.SPOUT, class_path=spout_path, par=1,
        config=freeze({}), outputs=freeze({stream: StreamDef(stream, tuple(fields))}),
        first_task_id=first[source],
        capabilities=capabilities_of(InputSpout, {}, spout=True, class_path=spout_path),
    )
    bolt = ComponentDef(
        name=name, kind=ComponentKind.BOLT, class_path=bolt_path, par=par,
        config=freeze(dict(config)), outputs=freeze(outputs_from_class(bolt_class) or {}),
        inputs=(InputDef(source, stream, Grouping(GroupingKind.SHUFFLE)),),
        first_task_id=first[name],
        capabilities=capabilities_of(bolt_class, config, spout=False, class_path=bolt_path),
    )
    return TopologyGraph(name=f"test_{name}", components=freeze({source: spout, name: bolt}))


def _rows(tuples: Sequence[Any], fields: Sequence[str] | None) -> tuple[list[list[Any]], list[str]]:
    if tuples and isinstance(tuples[0], Mapping):
        names = list(fields or tuples[0].keys())
        return [[t[f] for f in names] for t in tuples], names
    if fields is None:
        raise ValueError(
            "run_bolt: give fields=[...] (the upstream stream's field names, as the bolt reads "
            "tup.values.<field>) or pass the tuples as dicts"
        )
    return [list(t) for t in tuples], list(fields)


def run_bolt(
    bolt_class: type,
    tuples: Sequence[Any],
    *,
    fields: Sequence[str] | None = None,
    stream: str = "default",
    source: str = "source",
    name: str | None = None,
    par: int = 1,
    task_index: int = 0,
    batch_size: int | None = None,
    replay: bool = False,
    tick_after_batch: bool = False,
    conf: Mapping[str, Any] | None = None,
    redis: Any = None,
    namespace: str = "testing",
) -> BoltRun:
    """Run ``bolt_class`` over ``tuples`` in-process and return what it did.

    A bolt that raises on a tuple does not stop the run: the failure is in
    ``failures`` and the tuple id in ``fails`` (as Storm would fail it).
    """
    rows, names = _rows(tuples, fields)
    name = name or bolt_class.__name__
    graph = _graph(bolt_class, name, source, stream, names, par, conf or {})
    host = BoltHost(graph, name, task_index, component_class=bolt_class)
    host.open()
    r = redis if redis is not None else _fake_redis()
    log = CommitLog(r, namespace)
    base = log.committed() + 1  # a later run on the same redis continues its txids
    size = batch_size or max(1, len(rows))
    run = BoltRun(instance=host.instance, redis=r)
    source_task = graph.component(source).first_task_id
    for i, start in enumerate(range(0, len(rows), size) if rows else []):
        txid = base + i
        for attempt in range(2 if replay else 1):
            counted = attempt == (1 if replay else 0)  # a replay's first attempt "crashes"
            epoch = acquire_epoch(r, namespace, name, task_index)
            with TaskScope(r, namespace, name, task_index, txid, epoch):
                for values in rows[start : start + size]:
                    tup = host.new_tuple(source, stream, source_task, values)
                    try:
                        host.execute(tup)
                    except ComponentFailure as failure:
                        if counted:
                            run.failures.append(failure)
                    if counted:
                        run.tuple_ids.append(tup.id)
                if tick_after_batch:
                    host.tick()
            out = host.outbox.drain()
            if counted:
                run.emits += [Emitted(e.stream, list(e.values), tuple(e.anchors)) for e in out.emits]
                run.acks += out.acks
                run.fails += out.fails
                run.logs += out.logs
        log.record_commit(txid)
    run.state = {
        m: {k: v for k, (v, _t) in map_items(r, namespace, name, m).items()}
        for (comp, m) in map_kinds(r, namespace) if comp == name
    }
    return run
