"""Checks on the whole graph, and the topological order engines rely on.

Each check raises a TopologyError naming the component and the fix. They run
on the decoded ComponentDefs, so they also catch what streamparse's own
metaclass checks catch (the loader re-runs them to turn streamparse's bare
``KeyError``/``ValueError`` into these messages).
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence

from stormshift.topology.graph import ComponentDef, GroupingKind, InputDef
from stormshift.topology.project import topology_error

CYCLE_FIX = (
    "remove one subscription of the loop: a micro-batch must finish before the next one "
    "starts, so a bolt cannot feed an upstream component in the same batch; feed the loop "
    "back through a spout (e.g. a Redis Stream) instead"
)


def describe_streams(component: ComponentDef) -> str:
    return (
        ", ".join(
            f"{s.name!r}{' (direct)' if s.direct else ''} {list(s.fields)}"
            for s in component.outputs.values()
        )
        or "none"
    )


def check_names(components: Sequence[ComponentDef]) -> None:
    """Storm reserves names starting with ``__`` (``__system``, ``__acker``, ``__tick``)."""
    for c in components:
        if c.name.startswith("__"):
            raise topology_error(
                "component names starting with '__' are reserved by Storm",
                component=c.name,
                fix="rename the component",
            )
        for stream in c.outputs:
            if stream.startswith("__"):
                raise topology_error(
                    f"stream {stream!r}: stream names starting with '__' are reserved by Storm",
                    component=c.name,
                    fix="rename the stream",
                )


def check_shape(components: Sequence[ComponentDef]) -> None:
    """At least one spout; spouts emit something; every bolt reads something."""
    if not any(c.is_spout for c in components):
        raise topology_error(
            "the topology has no spout, so nothing would ever produce tuples",
            fix="declare at least one YourSpout.spec() in the Topology class",
        )
    for c in components:
        if c.is_spout and not c.outputs:
            raise topology_error(
                "spout declares no output streams",
                component=c.name,
                fix="set `outputs = [...]` on the spout class (field names or Stream(...) objects)",
            )
        if c.is_spout and c.inputs:
            raise topology_error(
                "a spout cannot have inputs", component=c.name, fix="make it a Bolt"
            )
        if not c.is_spout and not c.inputs:
            raise topology_error(
                "bolt has no input, so it would never receive a tuple",
                component=c.name,
                fix=f"subscribe it to an upstream component, e.g. {c.name} = YourBolt.spec("
                "inputs=[some_spout]) or inputs={some_spout: Grouping.fields('key')}",
            )


def check_input(consumer: ComponentDef, inp: InputDef, by_name: Mapping[str, ComponentDef]) -> None:
    """The source and stream exist, grouping fields exist, direct matches direct."""
    source = by_name.get(inp.source)
    if source is None:
        raise topology_error(
            f"subscribes to component {inp.source!r}, which the topology does not declare; "
            f"components are {sorted(by_name)}",
            component=consumer.name,
            fix="subscribe to one of the declared components",
        )
    stream = source.outputs.get(inp.stream)
    if stream is None:
        raise topology_error(
            f"subscribes to stream {inp.stream!r} of {inp.source!r}, which nobody declared; "
            f"{inp.source!r} declares: {describe_streams(source)}",
            component=consumer.name,
            fix=f"subscribe to a declared stream, e.g. {inp.source}[{next(iter(source.outputs), 'default')!r}], "
            f"or add Stream(fields=[...], name={inp.stream!r}) to the outputs of {inp.source!r}",
        )
    grouping = inp.grouping
    unknown = [f for f in grouping.fields if f not in stream.fields]
    if grouping.kind is GroupingKind.FIELDS and unknown:
        raise topology_error(
            f"fields grouping on {unknown} from {inp.source!r} stream {inp.stream!r}, which has "
            f"fields {list(stream.fields)}",
            component=consumer.name,
            fix=f"group by fields the stream declares, e.g. Grouping.fields({stream.fields[0]!r})"
            if stream.fields
            else "declare the field in the upstream outputs",
        )
    if grouping.kind is GroupingKind.DIRECT and not stream.direct:
        raise topology_error(
            f"uses a direct grouping on {inp.source!r} stream {inp.stream!r}, which is not a direct stream",
            component=consumer.name,
            fix=f"declare it as Stream(fields={list(stream.fields)}, name={inp.stream!r}, direct=True) "
            "in the upstream outputs, or use another grouping",
        )
    if stream.direct and grouping.kind is not GroupingKind.DIRECT:
        raise topology_error(
            f"uses grouping {grouping} on {inp.source!r} stream {inp.stream!r}, which is a direct "
            "stream (its emitter picks the task)",
            component=consumer.name,
            fix="subscribe with Grouping.DIRECT, or declare the stream without direct=True",
        )


def validate_components(components: Sequence[ComponentDef]) -> None:
    check_names(components)
    check_shape(components)
    by_name = {c.name: c for c in components}
    for consumer in components:
        for inp in consumer.inputs:
            check_input(consumer, inp, by_name)


def find_cycle(remaining: Sequence[ComponentDef]) -> list[str]:
    """A cycle among components that all still have an unplaced predecessor."""
    names = {c.name for c in remaining}
    preds = {c.name: [i.source for i in c.inputs if i.source in names] for c in remaining}
    path = [remaining[0].name]
    while True:
        previous = preds[path[-1]][0]
        if previous in path:
            loop = path[path.index(previous) :] + [previous]
            return list(reversed(loop))
        path.append(previous)


def topological_order(components: Sequence[ComponentDef]) -> list[ComponentDef]:
    """Sources before consumers; spouts first; ties by declaration order, then name."""
    position = {c.name: i for i, c in enumerate(components)}
    by_name = {c.name: c for c in components}
    waiting = {c.name: {i.source for i in c.inputs} for c in components}
    consumers: dict[str, list[str]] = {c.name: [] for c in components}
    for c in components:
        for source in sorted(waiting[c.name]):
            if source in consumers:
                consumers[source].append(c.name)

    def key(name: str) -> tuple[int, int, str]:
        return (0 if by_name[name].is_spout else 1, position[name], name)

    ready = [key(n) for n, deps in waiting.items() if not deps]
    heapq.heapify(ready)
    ordered: list[ComponentDef] = []
    while ready:
        name = heapq.heappop(ready)[2]
        ordered.append(by_name[name])
        for consumer in consumers[name]:
            waiting[consumer].discard(name)
            if not waiting[consumer]:
                heapq.heappush(ready, key(consumer))
    if len(ordered) < len(components):
        placed = {c.name for c in ordered}
        cycle = find_cycle([c for c in components if c.name not in placed])
        raise topology_error(
            f"the topology has a cycle: {' -> '.join(cycle)}", component=cycle[0], fix=CYCLE_FIX
        )
    return ordered
