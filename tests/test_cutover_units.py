"""The pure parts of a cut-over: config, value mapping, position arithmetic, the refusal
rule, the seed's records and the guarded target's script call (no server)."""

from __future__ import annotations

import pickle
from collections import Counter

import pytest

from stormshift.adapters.routing import choose_tasks
from stormshift.cutover.attrs import base_payloads, merge_tasks, split_values
from stormshift.cutover.plan import (
    ATTR,
    from_kafka,
    key_to_port,
    position_spec,
    refusal,
    seeds_of,
    to_kafka,
    to_legacy,
    to_port,
)
from stormshift.cutover.seed import map_record
from stormshift.errors import TopologyError
from stormshift.spouts.base import initial_offset, initial_offsets
from stormshift.spouts.redis_streams import stream_id_before
from stormshift.state.codec import committed_view, visible
from stormshift.state.target import parse_targets, target_call, target_text
from stormshift.topology.graph import ComponentDef, ComponentKind, Grouping, GroupingKind, InputDef


def test_kafka_offsets_are_one_past_the_spouts_and_back() -> None:
    committed = {"t/00000": 41, "t/00001": -1001}
    assert from_kafka(committed) == {"t/00000": 40}  # no commit: the spout's own start
    assert to_kafka(from_kafka(committed)) == {"t/00000": 41}


def test_stream_id_before_steps_over_sequence_and_millisecond() -> None:
    assert stream_id_before("5-3") == "5-2"
    assert stream_id_before("5-0") == f"4-{2**64 - 1}"
    assert stream_id_before("0-0") == "0-0"


def test_the_legacy_moving_or_a_live_member_refuses() -> None:
    assert refusal({"a": 1}, {"a": 1}, 5) is None
    assert "moved in the last 5 s" in (refusal({"a": 1}, {"a": 2}, 5) or "")
    assert "2 live member" in (refusal({"a": 1}, {"a": 1}, 5, members=2, group="g") or "")
    assert refusal({}, {"a": 3}, 1) is not None  # a partition appearing is movement too


def test_seed_values_map_both_ways() -> None:
    assert to_port(b"12.0", "int") == 12 and to_legacy(12, "int") == "12"
    assert to_port(b'{"a": 1}', "json") == {"a": 1} and to_legacy({"a": 1}, "json") == '{"a": 1}'
    assert to_port(b"x", "str") == "x" and to_port("2.5", "float") == 2.5


def test_seed_config_is_checked() -> None:
    conf = {"cutover.seed": {"count": {"map": "counts", "from": {"redis_zset": "words"}}}}
    [seed] = seeds_of(conf, {"count"})
    assert (seed.component, seed.map, seed.kind, seed.store, seed.name, seed.value) == (
        "count", "counts", "opaque", "redis_zset", "words", "int")
    with pytest.raises(TopologyError, match="cutover.seed entry 'nope'"):
        seeds_of({"cutover.seed": {"nope": {"map": "m", "from": {"redis_zset": "w"}}}}, {"count"})
    with pytest.raises(TopologyError):
        seeds_of({"cutover.seed": {"count": {"map": "m", "from": {}}}}, {"count"})


def test_position_spec_defaults_to_the_kafka_group() -> None:
    assert position_spec({"kafka.group_id": "legacy"}, "s") == {"kafka_group": "legacy"}
    assert position_spec({"cutover.position": {"s": {"file": "p"}}}, "s") == {"file": "p"}
    with pytest.raises(TopologyError, match="does not say where"):
        position_spec({}, "s")


@pytest.mark.parametrize("kind", ["opaque", "transactional"])
def test_a_seeded_entry_is_committed_state_for_the_next_txid(kind: str) -> None:
    rec = map_record(kind, 41, 0)
    assert committed_view(kind, rec) == (41, 0)
    data, applied = visible(kind, rec, 1)  # the port's first batch sees the seed
    assert data == b"i41" and not applied


def test_start_offsets_override_named_partitions_only() -> None:
    class Spout:
        _start_at = {"a": 7}

        def replay_initial_offsets(self) -> dict[str, int]:
            return {"a": -1, "b": -1}

        def replay_initial_offset(self, partition: str) -> int:
            return -1

    assert initial_offsets(Spout()) == {"a": 7, "b": -1}
    assert initial_offset(Spout(), "a") == 7 and initial_offset(Spout(), "c") == -1


def test_target_call_sets_the_last_value_or_adds_per_key() -> None:
    conf = {"cutover.sink": {"count:default": {"redis_zset": "words", "key": "word",
                                               "value": "count"}}}
    [target] = parse_targets(conf).values()
    leaves = [("default", ["a", 1, 0]), ("default", ["a", 2, 1]), ("other", ["b", 9, 2])]
    name, keys, args = target_call(target, ("word", "count", "rid"), "count:1", 5, leaves) or ("", [], [])
    assert (name, keys, args) == ("target_put", ["words", "words:stormshift:txid"],
                                  ["count:1", 5, "zset", "set", "a", "2"])
    adding = parse_targets({"cutover.sink": {"count:default": {
        "redis_hash": "h", "key": ["word"], "value": "count", "op": "add"}}})["count:default"]
    call = target_call(adding, ("word", "count", "rid"), "count:0", 5, leaves)
    assert call is not None and call[2][-2:] == ["a", "3"]
    assert target_call(target, ("word", "count", "rid"), "count:0", 5, []) is None
    assert target_text(3.0) == "3" and target_text(2.5) == "2.5"
    with pytest.raises(TopologyError, match="cutover.sink entry"):
        parse_targets({"cutover.sink": {"count:default": {"redis_zset": "w"}}})


def _counter_bolt(par: int, grouping: Grouping) -> ComponentDef:
    return ComponentDef("count", ComponentKind.BOLT, "m.Count", par, {}, {},
                        (InputDef("words", "default", grouping),))


def test_an_attribute_seed_is_split_by_the_ports_fields_grouping() -> None:
    comp = _counter_bolt(2, Grouping(GroupingKind.FIELDS, ("word",)))
    values = {w: n for n, w in enumerate(["it", "was", "the", "best", "of", "times"], 1)}
    parts = split_values(comp, values, Counter())
    for task, part in enumerate(parts):
        assert type(part) is Counter
        for word in part:  # the task the port's routing sends the word's tuples to
            assert choose_tasks(Grouping(GroupingKind.FIELDS, ("word",)), 2, [word, 0],
                                field_positions=(0,), emitter_task_index=0, seq=0) == (task,)
    assert all(parts) and merge_tasks(parts) == values
    by_task = [pickle.loads(p) for p in base_payloads(2, {"counts": parts})]
    assert by_task == [{"counts": parts[0]}, {"counts": parts[1]}]
    assert split_values(_counter_bolt(1, Grouping(GroupingKind.SHUFFLE)), values, {}) == [values]


def test_an_attribute_seed_beyond_one_task_needs_a_fields_grouping() -> None:
    with pytest.raises(TopologyError, match="no key is tied to one task"):
        split_values(_counter_bolt(2, Grouping(GroupingKind.SHUFFLE)), {"a": 1}, {})
    two = _counter_bolt(2, Grouping(GroupingKind.FIELDS, ("a", "b")))
    parts = split_values(two, {("x", 1): 5}, {})
    assert merge_tasks(parts) == {("x", 1): 5}
    with pytest.raises(TopologyError, match="not a tuple of 2 grouping values"):
        split_values(two, {"x": 5}, {})


def test_an_attribute_seed_config_is_checked() -> None:
    conf = {"cutover.seed": {"count": {"attr": "counts", "key": "int",
                                       "from": {"hook": "m:f", "hook_back": "m:g"}}}}
    [seed] = seeds_of(conf, {"count"})
    assert seed.is_attr and (seed.map, seed.kind, seed.store, seed.key) == (
        "counts", ATTR, "hook", "int")
    assert seed.extra == {"hook_back": "m:g"}
    for bad in ({"attr": "c", "map": "c"}, {"attr": "c", "kind": "opaque"}, {"attr": "c", "key": "x"}):
        with pytest.raises(TopologyError, match="dict attribute"):
            seeds_of({"cutover.seed": {"count": bad | {"from": {"redis_zset": "w"}}}}, {"count"})
    assert key_to_port(b"42", "int") == 42 and key_to_port(b"w", "str") == "w"
