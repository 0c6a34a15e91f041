"""Replayable built-in spouts against a real Redis (127.0.0.1:6379) and real files."""

from __future__ import annotations

import io
import json
import os
import pickle
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from stormshift.errors import TopologyError, TupleError
from stormshift.spouts import JsonLinesSpout, RecordDecodeError, RedisStreamSpout, read_range
from stormshift.spouts.base import parse_msg_id, partitions_of_task, task_position

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379")


class Recorder:
    """Stands in for the engine's emit path: keeps what the spout emitted."""

    def __init__(self) -> None:
        self.emits: list[tuple[list[Any], str]] = []

    def __call__(self, tup: list[Any], tup_id: str | None = None, **_: Any) -> None:
        self.emits.append((list(tup), tup_id))


def context_for(task_index: int, par: int, component: str = "src") -> dict[str, Any]:
    """A Storm context: spout tasks 3.. (ids of another component before them)."""
    mapping = {"1": "other", "2": "other"}
    mapping.update({str(3 + i): component for i in range(par)})
    return {"taskid": 3 + task_index, "componentid": component, "task->component": mapping}


def make(cls: type, conf: dict[str, Any], task_index: int = 0, par: int = 1) -> Any:
    # private pipes: pystorm wraps (and on collection closes) the streams it gets
    spout = cls(input_stream=io.BytesIO(), output_stream=io.BytesIO(), rdb_signal=None)
    spout.initialize(conf, context_for(task_index, par))
    spout.emit = Recorder()
    return spout


def drain(spout: Any, limit: int = 10_000) -> list[tuple[list[Any], str]]:
    """Call next_tuple until StopIteration, acking everything emitted."""
    for _ in range(limit):
        before = len(spout.emit.emits)
        try:
            spout.next_tuple()
        except StopIteration:
            return spout.emit.emits
        for _, msg_id in spout.emit.emits[before:]:
            spout.ack(msg_id)
    raise AssertionError("spout never reported end of input")


# -- fixtures -----------------------------------------------------------
@pytest.fixture
def r() -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(REDIS_URL)
    client.ping()
    yield client
    client.close()


@pytest.fixture
def stream_keys(r: redis.Redis) -> Iterator[list[str]]:
    prefix = f"test-spouts:{uuid.uuid4().hex}"
    keys = [f"{prefix}:b", f"{prefix}:a", f"{prefix}:c"]
    yield keys
    r.delete(*keys)


def write_lines(path: Path, lines: list[str], newline_at_end: bool = True) -> None:
    text = "\n".join(lines) + ("\n" if newline_at_end else "")
    path.write_text(text)


def click(i: int) -> str:
    return json.dumps({"ad": f"ad{i % 3}", "n": i})


# -- helpers ------------------------------------------------------------
def test_partition_assignment_is_index_mod_par() -> None:
    parts = ["c", "a", "d", "b", "e"]
    assert partitions_of_task(parts, 0, 2) == ["a", "c", "e"]
    assert partitions_of_task(parts, 1, 2) == ["b", "d"]
    assert task_position(context_for(1, 3)) == (1, 3)
    assert task_position({}) == (0, 1)
    assert parse_msg_id("dir/f.jsonl:12") == ("dir/f.jsonl", "12")


# -- JSON lines ---------------------------------------------------------
def test_jsonlines_offsets_ranges_and_order(tmp_path: Path) -> None:
    write_lines(tmp_path / "b.jsonl", [click(i) for i in range(5)])
    write_lines(tmp_path / "a.jsonl", [click(i) for i in range(10, 13)])
    (tmp_path / ".hidden.jsonl").write_text(click(99) + "\n")
    spout = make(JsonLinesSpout, {"jsonlines.path": str(tmp_path), "jsonlines.fields": ["ad", "n"]})

    assert spout.replay_partitions() == ["a.jsonl", "b.jsonl"]
    start = spout.replay_initial_offsets()
    assert start == {"a.jsonl": 0, "b.jsonl": 0}
    # one task: the budget is spent on the oldest (first sorted) file first
    first = spout.replay_latest_offsets(start, 2)
    assert first == {"a.jsonl": 2, "b.jsonl": 0}
    assert spout.replay_latest_offsets(first, 3) == {"a.jsonl": 3, "b.jsonl": 2}
    second = spout.replay_latest_offsets(first, 100)
    assert second == {"a.jsonl": 3, "b.jsonl": 5}

    got = list(spout.replay_read("b.jsonl", 2, 5))
    assert got == [(["ad2", 2], "b.jsonl:3"), (["ad0", 3], "b.jsonl:4"), (["ad1", 4], "b.jsonl:5")]
    # a replay of the same range returns exactly the same records
    assert list(spout.replay_read("b.jsonl", 2, 5)) == got
    assert list(spout.replay_read("a.jsonl", 0, 1)) == [(["ad1", 10], "a.jsonl:1")]
    assert list(spout.replay_read("a.jsonl", 3, 3)) == []


def test_jsonlines_batch_budget_is_per_spout_task(tmp_path: Path) -> None:
    for i in range(5):  # part-0, part-2, part-4 -> task 0; part-1, part-3 -> task 1
        write_lines(tmp_path / f"part-{i}.jsonl", [click(10 * i + j) for j in range(4)])
    spout = make(JsonLinesSpout, {"jsonlines.path": str(tmp_path)}, task_index=1, par=2)
    start = spout.replay_initial_offsets()
    first = spout.replay_latest_offsets(start, 6)
    assert first == {"part-0.jsonl": 4, "part-1.jsonl": 4, "part-2.jsonl": 2,
                     "part-3.jsonl": 2, "part-4.jsonl": 0}
    second = spout.replay_latest_offsets(first, 6)
    assert second == {"part-0.jsonl": 4, "part-1.jsonl": 4, "part-2.jsonl": 4,
                      "part-3.jsonl": 4, "part-4.jsonl": 4}
    assert spout.replay_latest_offsets(second, 6) == second


def test_jsonlines_unbounded_waits_for_newline_and_picks_up_new_files(tmp_path: Path) -> None:
    write_lines(tmp_path / "001.jsonl", [click(0), click(1)], newline_at_end=False)
    spout = make(JsonLinesSpout, {"jsonlines.path": str(tmp_path)})
    offsets = spout.replay_latest_offsets(spout.replay_initial_offsets(), 100)
    assert offsets == {"001.jsonl": 1}  # the second line is still being written
    assert not spout.replay_exhausted(offsets)

    with open(tmp_path / "001.jsonl", "a") as fh:
        fh.write("\n")
    write_lines(tmp_path / "002.jsonl", [click(2)])
    offsets = spout.replay_latest_offsets(offsets, 100)
    assert offsets == {"001.jsonl": 2, "002.jsonl": 1}
    # raw mode: the line itself is the single value
    assert list(spout.replay_read("002.jsonl", 0, 1)) == [([click(2)], "002.jsonl:1")]
    assert not spout.replay_exhausted(offsets)  # unbounded input never ends


def test_jsonlines_bounded_exhaustion_counts_unterminated_last_line(tmp_path: Path) -> None:
    write_lines(tmp_path / "x.jsonl", [click(0), "", click(1)], newline_at_end=False)
    spout = make(JsonLinesSpout, {"jsonlines.path": str(tmp_path / "*.jsonl"),
                                  "jsonlines.fields": ["n"], "jsonlines.bounded": True})
    start = spout.replay_initial_offsets()
    mid = spout.replay_latest_offsets(start, 2)
    assert mid == {"x.jsonl": 2} and not spout.replay_exhausted(mid)
    end = spout.replay_latest_offsets(mid, 10)
    assert end == {"x.jsonl": 3} and spout.replay_exhausted(end)
    # the blank line 2 takes an offset but emits nothing
    assert list(spout.replay_read("x.jsonl", 0, 3)) == [([0], "x.jsonl:1"), ([1], "x.jsonl:3")]


def test_jsonlines_glob_keeps_subdirectory_names(tmp_path: Path) -> None:
    for day in ("d1", "d2"):
        (tmp_path / day).mkdir()
        write_lines(tmp_path / day / "part.jsonl", [click(1)])
    spout = make(JsonLinesSpout, {"jsonlines.path": str(tmp_path / "*" / "*.jsonl")})
    assert spout.replay_partitions() == ["d1/part.jsonl", "d2/part.jsonl"]


def test_jsonlines_large_file_reads_in_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import stormshift.spouts.jsonlines as jl

    monkeypatch.setattr(jl, "_READ_BLOCK_BYTES", 64)
    write_lines(tmp_path / "big.jsonl", [click(i) for i in range(500)])
    spout = make(JsonLinesSpout, {"jsonlines.path": str(tmp_path), "jsonlines.fields": ["n"]})
    values = [v[0] for v, _ in spout.replay_read("big.jsonl", 123, 456)]
    assert values == list(range(123, 456))


def test_jsonlines_bad_record_raises_tuple_error_and_read_range_resumes(tmp_path: Path) -> None:
    write_lines(tmp_path / "f.jsonl", [click(0), "{not json", json.dumps({"ad": "x"}), click(3)])
    spout = make(JsonLinesSpout, {"jsonlines.path": str(tmp_path), "jsonlines.fields": ["ad", "n"]})
    with pytest.raises(RecordDecodeError) as info:
        list(spout.replay_read("f.jsonl", 0, 4))
    err = info.value
    assert isinstance(err, TupleError)
    assert (err.partition, err.offset, err.values) == ("f.jsonl", 2, ["{not json"])
    assert "not JSON" in str(err) and "f.jsonl:2" in str(err)

    dead: list[RecordDecodeError] = []
    good = list(read_range(spout, "f.jsonl", 0, 4, dead.append))
    assert good == [(["ad0", 0], "f.jsonl:1"), (["ad0", 3], "f.jsonl:4")]
    assert [(d.offset, d.raw) for d in dead] == [(2, "{not json"), (3, json.dumps({"ad": "x"}))]
    assert "missing field 'n'" in str(dead[1])


def _messy_lines() -> list[bytes]:
    """Blank and whitespace-only lines (ASCII and not), CRLF, bad JSON, a missing field,
    a non-object, invalid UTF-8, non-ASCII text, and a last line without newline."""
    return [click(0).encode(), b"", b"   \t", click(2).encode() + b"\r", b"{not json",
            json.dumps({"ad": "x"}).encode(), b"[1, 2]", b"\xff\xfe" + click(7).encode(),
            "\u00a0".encode(), json.dumps({"ad": "\u00e9t\u00e9", "n": 9}).encode(),
            b"\x1c", click(11).encode()]


@pytest.mark.parametrize("fields", [["ad", "n"], None], ids=["fields", "raw"])
@pytest.mark.parametrize("block_bytes", [8 << 20, 40], ids=["one-block", "small-blocks"])
def test_jsonlines_replay_values_gives_exactly_replay_reads_records(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fields: list[str] | None,
        block_bytes: int) -> None:
    """The Spark read path (values in blocks) and the local one (values + msg ids) agree
    record for record, bad records and their reasons included, on any range."""
    import stormshift.spouts.jsonlines as jl

    monkeypatch.setattr(jl, "_READ_BLOCK_BYTES", block_bytes)
    (tmp_path / "m.jsonl").write_bytes(b"\n".join(_messy_lines()))  # no newline at the end
    conf: dict[str, Any] = {"jsonlines.path": str(tmp_path), "jsonlines.bounded": True}
    if fields is not None:
        conf["jsonlines.fields"] = fields
    spout = make(JsonLinesSpout, conf)
    total = len(_messy_lines())
    seen = {}
    for start, end in [(0, total), (1, 9), (3, 4), (7, total), (5, 5)]:
        dead_read: list[RecordDecodeError] = []
        expected = [v for v, _ in read_range(spout, "m.jsonl", start, end, dead_read.append)]
        dead_values: list[RecordDecodeError] = []
        blocks = list(spout.replay_values("m.jsonl", start, end, dead_values.append))
        assert [v for block in blocks for v in block] == expected, (start, end)
        assert [(d.offset, d.values, str(d)) for d in dead_values] == \
            [(d.offset, d.values, str(d)) for d in dead_read]
        seen[(start, end)] = expected, [d.offset for d in dead_read]
    good, bad = seen[(0, total)]
    if fields is None:  # invalid UTF-8 is the only bad raw line; blank ones are skipped
        assert (len(good), bad) == (9, [8])
    else:  # bad JSON, missing field, not an object, bad UTF-8, "\u00a0" and "\x1c" no JSON
        assert (good, bad) == ([["ad0", 0], ["ad2", 2], ["\u00e9t\u00e9", 9], ["ad2", 11]],
                               [5, 6, 7, 8, 9, 11])


@pytest.mark.redis
def test_replay_values_default_blocks_a_sources_replay_read(r: redis.Redis,
                                                            stream_keys: list[str]) -> None:
    key = stream_keys[0]
    ids = add(r, key, [{"payload": click(i)} if i != 5 else {"payload": "{oops"}
                       for i in range(2500)])
    spout = make(RedisStreamSpout, {"redis_streams.url": REDIS_URL, "redis_streams.keys": [key],
                                    "redis_streams.json_fields": ["n"]})
    dead: list[RecordDecodeError] = []
    blocks = list(spout.replay_values(key, "0-0", ids[-1], dead.append))
    assert [v for block in blocks for v in block] == [[i] for i in range(2500) if i != 5]
    assert [d.offset for d in dead] == [ids[5]]
    assert all(len(block) <= 1024 for block in blocks) and len(blocks) == 3


def test_jsonlines_missing_path_is_a_clear_config_error(tmp_path: Path) -> None:
    with pytest.raises(TopologyError, match="jsonlines.path"):
        make(JsonLinesSpout, {})


def test_jsonlines_local_next_tuple_ack_fail_replay(tmp_path: Path) -> None:
    write_lines(tmp_path / "a.jsonl", [click(i) for i in range(3)])
    spout = make(JsonLinesSpout, {"jsonlines.path": str(tmp_path), "jsonlines.fields": ["n"],
                                  "jsonlines.bounded": True, "jsonlines.local_chunk": 2})
    for _ in range(3):
        spout.next_tuple()
    assert spout.emit.emits == [([0], "a.jsonl:1"), ([1], "a.jsonl:2"), ([2], "a.jsonl:3")]
    spout.ack("a.jsonl:1")
    spout.fail("a.jsonl:2")
    spout.next_tuple()  # the failed tuple comes back first, same msg id
    assert spout.emit.emits[-1] == ([1], "a.jsonl:2")
    assert spout.pending_count == 2
    spout.next_tuple()  # nothing new to read, tuples still pending: no end yet
    assert len(spout.emit.emits) == 4
    spout.ack("a.jsonl:2")
    spout.ack("a.jsonl:3")
    with pytest.raises(StopIteration):
        spout.next_tuple()


def test_jsonlines_local_tasks_split_files_and_skip_bad_records(tmp_path: Path) -> None:
    for name, base in (("a", 0), ("b", 10), ("c", 20)):
        write_lines(tmp_path / f"{name}.jsonl", [click(base + i) for i in range(2)])
    with open(tmp_path / "b.jsonl", "a") as fh:
        fh.write("[1, 2]\n" + click(12) + "\n")
    conf = {"jsonlines.path": str(tmp_path), "jsonlines.fields": ["n"], "jsonlines.bounded": True}
    task0, task1 = make(JsonLinesSpout, conf, 0, 2), make(JsonLinesSpout, conf, 1, 2)
    reported: list[dict[str, Any]] = []
    task1.send_message = reported.append  # Storm's multilang pipe, as the host captures it
    assert task0.my_partitions() == ["a.jsonl", "c.jsonl"]
    assert [v[0] for v, _ in drain(task0)] == [0, 1, 20, 21]
    assert [v[0] for v, _ in drain(task1)] == [10, 11, 12]
    assert task1.bad_record_count == 1 and len(reported) == 1
    assert reported[0]["command"] == "log"  # a warning line; the record is dead-lettered
    assert "b.jsonl:3" in reported[0]["msg"] and "dead-lettered (value)" in reported[0]["msg"]
    read, [letter] = task1.take_spout_report()
    assert read == 4 and (letter.kind, letter.position, letter.values) == ("value", "b.jsonl:3",
                                                                           ["[1, 2]"])
    assert task1.take_spout_report() == (0, [])


def test_jsonlines_spout_pickles_for_executors(tmp_path: Path) -> None:
    write_lines(tmp_path / "a.jsonl", [click(1)])
    spout = make(JsonLinesSpout, {"jsonlines.path": str(tmp_path), "jsonlines.fields": ["n"]})
    del spout.emit
    clone = pickle.loads(pickle.dumps(spout))
    assert list(clone.replay_read("a.jsonl", 0, 1)) == [([1], "a.jsonl:1")]


# -- Redis streams ------------------------------------------------------
def add(r: redis.Redis, key: str, entries: list[dict[str, str]]) -> list[str]:
    return [r.xadd(key, e).decode() for e in entries]


@pytest.mark.redis
def test_redis_offsets_ranges_and_order(r: redis.Redis, stream_keys: list[str]) -> None:
    b, a, c = stream_keys
    ids_a = add(r, a, [{"payload": click(i)} for i in range(4)])
    ids_b = add(r, b, [{"payload": click(i)} for i in range(10, 12)])
    spout = make(RedisStreamSpout, {"redis_streams.url": REDIS_URL, "redis_streams.keys": [b, a, c],
                                    "redis_streams.json_fields": ["ad", "n"]}, par=3)
    assert spout.replay_partitions() == sorted(stream_keys)  # one key per task
    start = spout.replay_initial_offsets()
    assert start == {a: "0-0", b: "0-0", c: "0-0"}
    first = spout.replay_latest_offsets(start, 3)
    assert first == {a: ids_a[2], b: ids_b[1], c: "0-0"}
    assert spout.replay_latest_offsets(first, 3) == {a: ids_a[3], b: ids_b[1], c: "0-0"}

    got = list(spout.replay_read(a, start[a], first[a]))
    assert got == [([f"ad{i}", i], f"{a}:{ids_a[i]}") for i in range(3)]
    assert list(spout.replay_read(a, start[a], first[a])) == got  # replay: same records
    assert list(spout.replay_read(a, ids_a[2], ids_a[3])) == [(["ad0", 3], f"{a}:{ids_a[3]}")]
    assert list(spout.replay_read(c, "0-0", "0-0")) == []


@pytest.mark.redis
def test_redis_field_modes_and_latest_start(r: redis.Redis, stream_keys: list[str]) -> None:
    key = stream_keys[0]
    add(r, key, [{"payload": "old", "ad": "a0", "user": "u0"}])
    spout = make(RedisStreamSpout, {"redis_streams.url": REDIS_URL, "redis_streams.keys": key,
                                    "redis_streams.start": "latest",
                                    "redis_streams.fields": {"user_id": "user", "ad_id": "ad"}})
    start = spout.replay_initial_offsets()
    new_id = add(r, key, [{"payload": "new", "ad": "a1", "user": "u1"}])[0]
    end = spout.replay_latest_offsets(start, 10)
    assert end == {key: new_id}
    assert list(spout.replay_read(key, start[key], end[key])) == [(["u1", "a1"], f"{key}:{new_id}")]

    raw = make(RedisStreamSpout, {"redis_streams.url": REDIS_URL, "redis_streams.keys": [key]})
    assert [v for v, _ in raw.replay_read(key, "0-0", new_id)] == [["old"], ["new"]]


@pytest.mark.redis
def test_redis_reads_past_one_xrange_page(r: redis.Redis, stream_keys: list[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import stormshift.spouts.redis_streams as rs

    monkeypatch.setattr(rs, "_READ_COUNT", 7)
    key = stream_keys[0]
    ids = add(r, key, [{"payload": str(i)} for i in range(30)])
    spout = make(RedisStreamSpout, {"redis_streams.url": REDIS_URL, "redis_streams.keys": [key]})
    assert [v[0] for v, _ in spout.replay_read(key, ids[2], ids[25])] == [str(i) for i in range(3, 26)]


@pytest.mark.redis
def test_redis_bad_entry_is_dead_lettered_not_dropped(r: redis.Redis, stream_keys: list[str]) -> None:
    key = stream_keys[0]
    ids = add(r, key, [{"payload": click(1)}, {"payload": "{oops"}, {"other": "x"}, {"payload": click(4)}])
    spout = make(RedisStreamSpout, {"redis_streams.url": REDIS_URL, "redis_streams.keys": [key],
                                    "redis_streams.json_fields": ["n"]})
    dead: list[RecordDecodeError] = []
    good = list(read_range(spout, key, "0-0", ids[-1], dead.append))
    assert good == [([1], f"{key}:{ids[0]}"), ([4], f"{key}:{ids[3]}")]
    assert [(d.offset, d.values) for d in dead] == [(ids[1], [{"payload": "{oops"}]),
                                                   (ids[2], [{"other": "x"}])]
    assert "missing entry field 'payload'" in str(dead[1])


@pytest.mark.redis
def test_redis_bounded_exhaustion(r: redis.Redis, stream_keys: list[str]) -> None:
    a, b = stream_keys[:2]
    ids = add(r, a, [{"payload": "1"}, {"payload": "2"}])
    spout = make(RedisStreamSpout, {"redis_streams.url": REDIS_URL, "redis_streams.keys": [a, b],
                                    "redis_streams.bounded": True})
    offsets = spout.replay_latest_offsets(spout.replay_initial_offsets(), 1)
    assert not spout.replay_exhausted(offsets)
    offsets = spout.replay_latest_offsets(offsets, 1)
    assert offsets[a] == ids[1] and spout.replay_exhausted(offsets)
    add(r, b, [{"payload": "3"}])  # more input arrived: not exhausted any more
    assert not spout.replay_exhausted(offsets)


@pytest.mark.redis
def test_redis_local_tasks_next_tuple_and_replay(r: redis.Redis, stream_keys: list[str]) -> None:
    b, a, c = stream_keys
    for key in (a, b, c):
        add(r, key, [{"payload": f"{key[-1]}{i}"} for i in range(3)])
    conf = {"redis_streams.url": REDIS_URL, "redis_streams.keys": [a, b, c],
            "redis_streams.bounded": True, "redis_streams.local_chunk": 2}
    task0, task1 = make(RedisStreamSpout, conf, 0, 2), make(RedisStreamSpout, conf, 1, 2)
    assert task0.my_partitions() == [a, c] and task1.my_partitions() == [b]
    assert [v[0] for v, _ in drain(task1)] == ["b0", "b1", "b2"]

    task0.next_tuple()
    task0.next_tuple()
    first_id = task0.emit.emits[0][1]
    task0.fail(first_id)
    task0.ack(task0.emit.emits[1][1])
    values = [v[0] for v, _ in drain(task0)]
    assert values == ["a0", "a1", "a0", "a2", "c0", "c1", "c2"]
    assert task0.emit.emits[2][1] == first_id
    assert pickle.loads(pickle.dumps(task0)).my_partitions() == [a, c]


# -- through the real hosts and the local engine -------------------------
TOPOLOGY = '''
from streamparse import Grouping, JavaSpout, Topology
from ssit_bolts import SumBolt
from ssit_spouts import Clicks


class ClicksTopology(Topology):
    clicks = Clicks.spec(par=2)
    sums = SumBolt.spec(inputs={clicks: Grouping.fields("ad")}, par=2)
'''

JAVA_TOPOLOGY = '''
from streamparse import Grouping, JavaSpout, Topology
from ssit_bolts import SumBolt


class KafkaTopology(Topology):
    clicks = JavaSpout.spec(full_class_name="org.apache.storm.kafka.spout.KafkaSpout",
                            args_list=[], outputs=["ad", "n"], par=2)
    sums = SumBolt.spec(inputs={clicks: Grouping.fields("ad")}, par=2)
'''

SPOUTS = '''
from stormshift.spouts import JsonLinesSpout


class Clicks(JsonLinesSpout):
    outputs = ["ad", "n"]
'''

BOLTS = '''
from streamparse import Bolt


class SumBolt(Bolt):
    outputs = ["ad", "total"]

    def initialize(self, conf, ctx):
        self.totals = {}

    def process(self, tup):
        ad, n = tup.values
        self.totals[ad] = self.totals.get(ad, 0) + n
        self.emit([ad, self.totals[ad]])
'''


def make_project(root: Path, topology: str, config: dict[str, Any]) -> Path:
    for rel, text in {"config.json": json.dumps(config), "topologies/clicks.py": topology,
                      "src/ssit_spouts.py": SPOUTS, "src/ssit_bolts.py": BOLTS}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def click_files(data: Path, bad_line: bool = True) -> dict[str, int]:
    data.mkdir()
    want: dict[str, int] = {}
    for part in range(3):
        lines = []
        for i in range(40):
            n = part * 100 + i
            lines.append(click(n))
            want[f"ad{n % 3}"] = want.get(f"ad{n % 3}", 0) + n
        if bad_line and part == 1:
            lines.insert(5, '{"ad": "ad0"}')  # missing "n": reported, not counted
        write_lines(data / f"part-{part}.jsonl", lines)
    return want


def test_spout_host_captures_emits_and_reports_bad_records(tmp_path: Path) -> None:
    from stormshift.adapters.host import SpoutHost
    from stormshift.topology.loader import load_topology

    data = tmp_path / "data"
    click_files(data)
    conf = {"jsonlines.path": str(data), "jsonlines.fields": ["ad", "n"], "jsonlines.bounded": True}
    project = make_project(tmp_path / "proj", TOPOLOGY, {"envs": {}})
    graph = load_topology(project, overrides=conf)
    host = SpoutHost(graph, "clicks", 1)
    host.open()
    emitted, errors = [], []
    while not host.exhausted:
        host.next_tuple()
        box = host.outbox.drain()
        errors += box.errors
        for emit in box.emits:
            emitted.append((emit.values, emit.msg_id))
            host.ack(emit.msg_id)
    assert [m for _, m in emitted] == [f"part-1.jsonl:{i}" for i in range(1, 42) if i != 6]
    assert emitted[0][0] == ["ad1", 100]
    assert errors == []  # dead-lettered at the spout, not an error of the component
    read, [letter] = host.instance.take_spout_report()
    assert read == 41 and letter.position == "part-1.jsonl:6" and letter.kind == "value"
    assert "missing field 'n'" in letter.reason


def test_local_engine_counts_every_good_record_once(tmp_path: Path) -> None:
    from stormshift.engines.local import LocalEngine
    from stormshift.topology.loader import load_topology

    data = tmp_path / "data"
    want = click_files(data)
    conf = {"jsonlines.path": str(data), "jsonlines.fields": ["ad", "n"], "jsonlines.bounded": True}
    project = make_project(tmp_path / "proj", TOPOLOGY, {"envs": {}})
    summary = LocalEngine(load_topology(project, overrides=conf)).run()
    assert {ad: v[1] for ad, v in summary.latest("sums").items()} == want
    clicks = summary["clicks"]
    assert clicks.tuples_out == 120 and clicks.errors == 0 and clicks.dead_lettered == 1
    assert clicks.records_read == 121 and summary.dead_letter_reasons == {"clicks": {"value": 1}}
    assert [d["position"] for d in summary.spout_dead_letters] == ["part-1.jsonl:6"]
    assert summary.accounting()["spouts"]["clicks"]["holds"]


@pytest.mark.redis
def test_java_kafka_spout_replaced_by_redis_streams(tmp_path: Path, r: redis.Redis,
                                                    stream_keys: list[str]) -> None:
    """The migrations guide's example: config maps the JavaSpout to RedisStreamSpout."""
    from stormshift.engines.local import LocalEngine
    from stormshift.topology.loader import load_topology

    want: dict[str, int] = {}
    for k, key in enumerate(stream_keys[:2]):
        for i in range(25):
            n = 1000 * k + i
            r.xadd(key, {"payload": click(n)})
            want[f"ad{n % 3}"] = want.get(f"ad{n % 3}", 0) + n
    config = {"envs": {}, "stormshift.replacements": {"clicks": {
        "class": "stormshift.spouts.RedisStreamSpout",
        "config": {"redis_streams.url": REDIS_URL, "redis_streams.keys": stream_keys[:2],
                   "redis_streams.json_fields": ["ad", "n"], "redis_streams.bounded": True}}}}
    graph = load_topology(make_project(tmp_path / "kafka", JAVA_TOPOLOGY, config))
    spout = graph.component("clicks")
    assert spout.class_path.endswith("RedisStreamSpout") and "KafkaSpout" in (spout.replaces or "")
    summary = LocalEngine(graph).run()
    assert {ad: v[1] for ad, v in summary.latest("sums").items()} == want
    assert summary["clicks"].tuples_out == 50
