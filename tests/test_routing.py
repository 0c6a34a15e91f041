"""Routing: Storm's groupings as a pure, stable function (stormshift.adapters.routing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from support.adapters_fixtures import (
    ColocatedTopology,
    GroupingsTopology,
    KeyedTopology,
    LoneColocatedTopology,
    WordCountTopology,
)

from stormshift.adapters.routing import Router, choose_tasks, hash_one, stable_hash
from stormshift.errors import TupleError
from stormshift.topology.graph import Grouping, GroupingKind
from stormshift.topology.loader import load_topology

KEYS = [f"user-{i}" for i in range(200)] + list(range(-50, 50)) + ["", "ünïcødé", "🙂"]


@pytest.fixture(scope="module")
def groupings_graph():
    return load_topology(GroupingsTopology)


def _route_table(graph, keys):
    router = Router(graph, "pairs", 1)
    return [[list(t) for t in router.route("default", [k, 7])] for k in keys]


# -- stable hash -------------------------------------------------------
def test_stable_hash_equal_values_hash_equal():
    assert stable_hash([(1, 2)]) == stable_hash([[1, 2]])  # tuples arrive as lists
    assert stable_hash([{"a": 1, "b": 2}]) == stable_hash([{"b": 2, "a": 1}])
    assert stable_hash(["word"]) == hash_one("word") == stable_hash(("word",))
    assert stable_hash([42]) == hash_one(42)
    assert stable_hash(["ab", "c"]) != stable_hash(["a", "bc"])
    assert stable_hash([1]) != stable_hash([True]) != stable_hash(["1"])


def test_stable_hash_known_values_are_crc32_of_tagged_encoding():
    import zlib

    assert stable_hash(["word"]) == zlib.crc32(b"sword")
    assert stable_hash([7]) == zlib.crc32(b"i7")
    assert stable_hash(["a", 1]) == zlib.crc32(b"sa\x1fi1")


def test_routing_is_identical_in_a_process_with_another_hash_seed(groupings_graph):
    here = _route_table(groupings_graph, KEYS)
    code = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from support.adapters_fixtures import GroupingsTopology\n"
        "from stormshift.topology.loader import load_topology\n"
        "from stormshift.adapters.routing import Router\n"
        "g = load_topology(GroupingsTopology)\n"
        "r = Router(g, 'pairs', 1)\n"
        "print(json.dumps([[list(t) for t in r.route('default', [k, 7])] for k in json.loads(sys.argv[1])]))\n"
    )
    for seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", code, json.dumps(KEYS)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            cwd=str(Path(__file__).parent.parent),
        ).stdout
        assert json.loads(out) == here


# -- choose_tasks: Storm's documented behaviour -------------------------
def test_fields_same_values_same_task_and_all_tasks_used():
    g = Grouping(GroupingKind.FIELDS, ("key",))
    chosen = {
        k: choose_tasks(g, 4, [k], field_positions=[0], emitter_task_index=0, seq=s)
        for s, k in enumerate(KEYS)
    }
    again = {
        k: choose_tasks(g, 4, [k], field_positions=[0], emitter_task_index=3, seq=99) for k in KEYS
    }
    assert chosen == again  # neither the emitter nor the counter matters
    assert {t for (t,) in chosen.values()} == {0, 1, 2, 3}
    assert max(Counter(chosen.values()).values()) < len(KEYS) / 2  # spread, not piled up


def test_fields_ignores_values_outside_the_grouping(groupings_graph):
    router = Router(groupings_graph, "pairs", 0)
    by_field = [dict(router.route("default", ["same-key", n]))["by_field"] for n in range(20)]
    assert len(set(by_field)) == 1
    assert by_field[0] == stable_hash(["same-key"]) % 4


def test_fields_on_two_fields_uses_grouping_order(groupings_graph):
    router = Router(groupings_graph, "pairs", 0)
    target = dict(router.route("default", ["k", 5]))["by_two"]
    assert target == stable_hash([5, "k"]) % 3  # Grouping.fields("n", "key")


def test_shuffle_is_round_robin_from_the_emitter_index():
    g = Grouping(GroupingKind.SHUFFLE)
    picks = [
        choose_tasks(g, 3, ["x"], field_positions=(), emitter_task_index=1, seq=s)[0]
        for s in range(9)
    ]
    assert picks == [1, 2, 0, 1, 2, 0, 1, 2, 0]
    assert Counter(picks) == {0: 3, 1: 3, 2: 3}  # Storm: each task gets an equal number


def test_global_all_direct():
    assert choose_tasks(
        Grouping(GroupingKind.GLOBAL), 5, [1], field_positions=(), emitter_task_index=3, seq=7
    ) == (0,)
    assert choose_tasks(
        Grouping(GroupingKind.ALL), 3, [1], field_positions=(), emitter_task_index=0, seq=0
    ) == (0, 1, 2)
    assert choose_tasks(
        Grouping(GroupingKind.DIRECT),
        3,
        [1],
        field_positions=(),
        emitter_task_index=0,
        seq=0,
        direct_index=2,
    ) == (2,)


# -- Router over a loaded topology ---------------------------------------
def test_router_matches_the_pure_function_for_every_consumer(groupings_graph):
    router = Router(groupings_graph, "pairs", 1)
    subs = {s.consumer: s for s in groupings_graph.subscriptions("pairs", "default")}
    fields = groupings_graph.stream_fields("pairs", "default")
    for seq, key in enumerate(KEYS[:50]):
        values = [key, seq]
        got = router.route("default", values)
        expected = []
        for name, sub in subs.items():
            positions = [fields.index(f) for f in sub.grouping.fields]
            for index in choose_tasks(
                sub.grouping,
                sub.par,
                values,
                field_positions=positions,
                emitter_task_index=1,
                seq=seq,
            ):
                expected.append((name, index))
        assert list(got) == expected


def _expected(graph, component, values, seq):
    fields = graph.stream_fields(component, "default")
    out = []
    for sub in graph.subscriptions(component, "default"):
        positions = [fields.index(f) for f in sub.grouping.fields]
        for index in choose_tasks(sub.grouping, sub.par, values, field_positions=positions,
                                  emitter_task_index=0, seq=seq):
            out.append((sub.consumer, index))
    return out


def test_keyed_routes_are_memoized_without_changing_a_choice():
    # Only fields / global / all consumers: targets depend on the key values alone and are
    # memoized per combination of str values. 1, 1.0 and True are equal dict keys but hash
    # differently, so they are never memoized; a second pass reads the memo.
    graph = load_topology(KeyedTopology)
    router = Router(graph, "pairs", 0)
    rows = [[k, n] for k in KEYS[:60] for n in ("a", "b", 7)] + [[1, 1], [1.0, 1.0], [True, True],
                                                                 ["x", None], [None, "x"]]
    for _pass in range(2):
        for seq, values in enumerate(rows):
            assert list(router.route("default", values)) == _expected(graph, "pairs", values, seq)
    listed = [["a", "list"], "n"]  # no dict key, but the grouping hashes it
    assert list(router.route("default", listed)) == _expected(graph, "pairs", listed, 0)
    with pytest.raises(TupleError, match="cannot route to 'by_key'"):
        router.route("default", [object(), "n"])


def test_router_round_robin_counts_per_stream_and_resets(groupings_graph):
    router = Router(groupings_graph, "pairs", 0)
    first = [dict(router.route("default", ["k", i]))["shuffled"] for i in range(6)]
    assert first == [0, 1, 2, 0, 1, 2]
    assert router.seq("default") == 6
    router.reset_seq()
    assert [dict(router.route("default", ["k", i]))["shuffled"] for i in range(3)] == [0, 1, 2]


def test_all_and_global_targets(groupings_graph):
    targets = Router(groupings_graph, "pairs", 1).route("default", ["k", 1])
    assert [t for t in targets if t[0] == "to_all"] == [("to_all", 0), ("to_all", 1), ("to_all", 2)]
    assert [t for t in targets if t[0] == "to_global"] == [("to_global", 0)]


def test_task_ids_are_storm_global_ids(groupings_graph):
    router = Router(groupings_graph, "pairs", 0)
    directed = groupings_graph.component("directed")
    ids = router.task_ids((("directed", 1), ("to_all", 2)))
    assert ids == [
        directed.first_task_id + 1,
        groupings_graph.component("to_all").first_task_id + 2,
    ]


def test_direct_routes_to_the_named_task(groupings_graph):
    router = Router(groupings_graph, "pairs", 0)
    directed = groupings_graph.component("directed")
    task_id = directed.task_id(1)
    assert router.route("direct", ["k", 1], direct_task_id=task_id) == (("directed", 1),)


def test_direct_errors(groupings_graph):
    router = Router(groupings_graph, "pairs", 0)
    with pytest.raises(TupleError, match="regular emit to direct stream 'direct'"):
        router.route("direct", ["k", 1])
    with pytest.raises(TupleError, match="is not a task of any consumer"):
        router.route(
            "direct", ["k", 1], direct_task_id=groupings_graph.component("to_all").task_id(0)
        )
    with pytest.raises(TupleError, match="not declared direct"):
        router.route(
            "default", ["k", 1], direct_task_id=groupings_graph.component("directed").task_id(0)
        )


def test_undeclared_stream_names_component_and_declared_streams(groupings_graph):
    router = Router(groupings_graph, "pairs", 0)
    with pytest.raises(TupleError) as err:
        router.route("nope", ["k", 1])
    assert "'pairs'" in str(err.value) and "['default', 'direct']" in str(err.value)
    assert err.value.component == "pairs" and err.value.stream == "nope"


def test_wrong_arity_is_a_tuple_error(groupings_graph):
    router = Router(groupings_graph, "pairs", 0)
    with pytest.raises(TupleError, match=r"emitted 1 values .* declares 2 fields \['key', 'n'\]"):
        router.route("default", ["only-key"])


def test_stream_without_consumers_routes_nowhere_but_still_checks():
    graph = load_topology(WordCountTopology)
    router = Router(graph, "count_bolt", 0)
    assert router.route("default", ["w", 1]) == ()
    with pytest.raises(TupleError):
        router.route("default", ["w"])


def test_unhashable_grouping_value_is_a_tuple_error(groupings_graph):
    router = Router(groupings_graph, "pairs", 0)
    with pytest.raises(TupleError, match="cannot route to 'by_field'"):
        router.route("default", [{1, 2}, 1])


def test_a_colocated_consumer_gets_the_emitters_own_task_and_is_decided_when_routed():
    graph = load_topology(ColocatedTopology)
    for task in range(2):
        router = Router(graph, "spout", task, frozenset({"head"}))
        picks = [dict(router.route("default", [f"k{n}", n])) for n in range(8)]
        assert {p["head"] for p in picks} == {task}  # never round robin: the emitter's index
        assert len({p["other"] for p in picks}) == 2  # the others route as Storm does
    lone = load_topology(LoneColocatedTopology)
    assert Router(lone, "spout", 1, frozenset({"head"})).constant == {"default": (("head", 1),)}
    assert "default" not in Router(lone, "spout", 1).constant  # round robin without colocation
    assert graph.component("head").inputs[0].grouping.kind is GroupingKind.SHUFFLE
    with pytest.raises(ValueError, match="'other' cannot be colocated"):
        Router(graph, "spout", 0, frozenset({"other"}))
