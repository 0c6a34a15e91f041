"""Hosting real streamparse components in-process (stormshift.adapters.host)."""

from __future__ import annotations

import io
import json
import logging
import os
import signal
import sys
import threading
from typing import Any

import pystorm.bolt
import pystorm.spout
import pytest
from support.adapters_fixtures import (
    EchoTopology,
    GroupingsTopology,
    ReliableSentenceSpout,
    WordCountTopology,
)

from stormshift.adapters import (
    BoltHost,
    EndOfInput,
    SpoutHost,
    batch_ids,
    counter_ids,
    host_component,
    random_ids,
    working_dir,
)
from stormshift.adapters.tuples import values_type_name
from stormshift.errors import ComponentFailure, TupleError
from stormshift.topology.loader import load_topology


@pytest.fixture(scope="module")
def wc():
    return load_topology(WordCountTopology)


@pytest.fixture(scope="module")
def echo():
    return load_topology(EchoTopology)


def bolt(graph, name, task=0, **kw) -> BoltHost:
    host = host_component(graph, name, task, **kw)
    assert isinstance(host, BoltHost)
    host.open()
    return host


def feed(host: BoltHost, words, source="words"):
    tuples = [host.new_tuple(source, "default", 1, [w]) for w in words]
    for tup in tuples:
        try:
            host.execute(tup)
        except ComponentFailure:
            pass
    return tuples


def shape(outbox) -> dict[str, Any]:
    """An outbox as plain data (targets name the consumer, so compare per bolt)."""
    return {
        "emits": [(e.stream, e.values, e.targets, e.anchors, e.msg_id) for e in outbox.emits],
        "acks": outbox.acks,
        "fails": outbox.fails,
        "errors": [e.splitlines()[0] for e in outbox.errors],
        "syncs": outbox.syncs,
    }


# -- context and tuples ------------------------------------------------
def test_context_has_storm_multilang_shapes(wc):
    host = bolt(wc, "split_bolt", 1)
    ctx = host.instance.seen_context
    assert ctx["taskid"] == wc.component("split_bolt").task_id(1) == host.instance.task_id
    assert ctx["componentid"] == "split_bolt" == host.instance.component_name
    assert ctx["task->component"] == {str(t): c for t, c in wc.task_to_component().items()}
    assert all(isinstance(k, str) for k in ctx["task->component"])
    assert ctx["source->stream->fields"] == {"sentence_spout": {"default": ["sentence"]}}
    assert ctx["source->stream->grouping"] == {"sentence_spout": {"default": {"type": "SHUFFLE"}}}
    assert ctx["stream->target->grouping"] == {
        "default": {"count_bolt": {"type": "FIELDS", "fields": ["word"]}},
        "stats": {"stats_sink": {"type": "SHUFFLE"}},
    }
    assert ctx["stream->outputfields"] == {"default": ["word"], "stats": ["length", "sentence"]}
    assert host.instance.storm_conf["topology.name"] == wc.name == host.instance.topology_name
    json.dumps(ctx)  # it is JSON, as Storm sends it


def test_global_and_direct_groupings_in_context():
    graph = load_topology(GroupingsTopology)
    ctx = host_component(graph, "pairs", 0).context["stream->target->grouping"]
    assert ctx["default"]["to_global"] == {"type": "FIELDS", "fields": []}  # Storm's global
    assert ctx["default"]["local"] == {"type": "LOCAL_OR_SHUFFLE"}
    assert ctx["direct"]["directed"] == {"type": "DIRECT"}


def test_tuples_are_built_exactly_as_pystorm_reads_them(wc, tmp_path):
    """Feed one multilang message to a real pystorm Bolt and compare with ours."""
    host = bolt(wc, "split_bolt")
    message = {
        "id": "-6955786537413359385",
        "comp": "sentence_spout",
        "stream": "default",
        "task": 4,
        "tuple": ["a b"],
    }
    stream = io.BytesIO((json.dumps(message) + "\nend\n").encode())
    theirs_bolt = pystorm.bolt.Bolt(
        input_stream=stream, output_stream=io.BytesIO(), rdb_signal=None
    )
    root = logging.getLogger()
    before = list(root.handlers)
    try:
        conf = {"pystorm.log.path": str(tmp_path), "topology.name": wc.name}
        theirs_bolt._setup_component(conf, host.context)
    finally:
        for h in root.handlers[:]:
            if h not in before:
                root.removeHandler(h)
                h.close()
    theirs = theirs_bolt.read_tuple()
    ours = host.tuple_factory.make("sentence_spout", "default", 4, ["a b"], "-6955786537413359385")
    assert ours == theirs
    assert (
        type(ours.values).__name__ == type(theirs.values).__name__ == "Sentence_SpoutDefaultTuple"
    )
    assert ours.values.sentence == "a b"
    assert values_type_name("my-spout", "1st") == "My_Spout_1StTuple"
    ours_types = host.instance._source_tuple_types["sentence_spout"]["default"]
    assert (
        ours_types._fields == theirs_bolt._source_tuple_types["sentence_spout"]["default"]._fields
    )


def test_wrong_arity_input_is_a_tuple_error(wc):
    host = bolt(wc, "split_bolt")
    with pytest.raises(TupleError, match="declares 1 fields"):
        host.tuple_factory.make("sentence_spout", "default", 4, ["a", "b"], "1")
    with pytest.raises(TupleError, match="declares 1 fields"):
        host.tuple_factory.maker("sentence_spout", "default")(["a", "b"], "1", 4)


def test_id_generators():
    ids = batch_ids(7, 2)
    assert [ids(), ids()] == ["7:2:0", "7:2:1"]
    a, b = random_ids(42), random_ids(42)
    first = [a() for _ in range(1000)]
    assert first == [b() for _ in range(1000)] and len(set(first)) == 1000
    assert all(-(2**63) <= int(x) < 2**63 for x in first)
    c = counter_ids()
    assert [c(), c()] == ["1", "2"]


# -- emit / ack / anchors ----------------------------------------------
def test_emit_anchors_and_need_task_ids_return_global_ids(wc):
    host = bolt(wc, "split_bolt")
    tup = host.new_tuple("sentence_spout", "default", 4, ["x y"])
    host.execute(tup)
    out = host.outbox.drain()
    words = [e for e in out.emits if e.stream == "default"]
    assert [e.values for e in words] == [["x"], ["y"]]
    assert all(e.anchors == (tup.id,) for e in out.emits)
    assert host.instance.task_ids_seen == [host.router.task_ids(e.targets) for e in words]
    count = wc.component("count_bolt")
    assert all(
        count.first_task_id <= i < count.first_task_id + count.par
        for [i] in host.instance.task_ids_seen
    )
    assert out.acks == [tup.id] and out.fails == []
    assert out.logs == [("INFO", "stormshift.component.split_bolt - split 3 chars")]
    assert not host.outbox  # drained


def test_explicit_fail_is_not_auto_acked_and_explicit_ack_is_not_doubled(echo):
    host = bolt(echo, "echo")
    ok, failed, acked = feed(host, ["ok", "fox", "apple"])
    out = host.outbox.drain()
    assert out.acks == [ok.id, acked.id]
    assert out.fails == [failed.id]
    assert [e.values for e in out.emits] == [["ok"], ["fox"], ["apple"]]


def test_exception_reports_error_fails_tuple_and_names_user_code(echo):
    host = bolt(echo, "echo")
    tup = host.new_tuple("words", "default", 1, ["boom"])
    with pytest.raises(ComponentFailure) as err:
        host.execute(tup)
    failure = err.value
    assert failure.component == "echo" and failure.call == "process" and failure.tup is tup
    assert failure.where.startswith("support.adapters_fixtures:") and failure.where.endswith("in process")
    assert isinstance(failure.cause, ValueError) and "boom is not a word" in failure.traceback_text
    out = host.outbox.drain()
    assert out.fails == [tup.id] and out.acks == [] and out.emits == []
    assert out.errors[0].startswith("Python ValueError raised while processing Tuple")
    assert out.syncs == 1  # pystorm syncs right after reporting an error
    host.execute(host.new_tuple("words", "default", 1, ["next"]))  # the task goes on
    assert host.outbox.drain().acks


def test_manual_ack_and_anchor(echo):
    host = bolt(echo, "manual")
    t1, t2 = feed(host, ["a", "b"])
    out = host.outbox.drain()
    assert [(e.values, e.anchors) for e in out.emits] == [
        (["a"], ()),
        (["A"], (t1.id,)),
        (["b"], ()),
        (["B"], (t2.id,)),
    ]
    assert out.acks == [t1.id, t2.id]  # acked together when the second arrived


def test_fast_and_slow_paths_give_identical_outboxes(echo):
    words = ["ok", "fox", "apple", "boom", "zed"]
    fast = bolt(echo, "echo", tuple_ids=counter_ids())
    slow = bolt(echo, "echo_slow", tuple_ids=counter_ids())
    assert fast.fast_path and not slow.fast_path
    feed(fast, words)
    feed(slow, words)
    assert shape(fast.outbox) == shape(slow.outbox)
    assert len(fast.outbox.emits) == 4 and len(fast.outbox.fails) == 2


def test_reliable_spout_fast_path_tracks_and_replays():
    graph = load_topology(WordCountTopology)
    host = SpoutHost(graph, "sentence_spout", 0, component_class=ReliableSentenceSpout)
    host.open()
    assert host.fast_path
    host.next_tuple()
    host.next_tuple()
    assert host.instance.unacked_tuples == {
        0: ([host.outbox.emits[0].values[0]], None, None, False),
        1: ([host.outbox.emits[1].values[0]], None, None, False),
    }
    host.ack(0)
    host.fail(1)  # ReliableSpout re-emits a failed tuple
    out = host.outbox.drain()
    assert [e.msg_id for e in out.emits] == [0, 1, 1]
    assert list(host.instance.unacked_tuples) == [1]


def test_spout_end_of_input(wc):
    host = host_component(wc, "sentence_spout", 0)
    host.open()
    while not host.exhausted:
        host.next_tuple()
    assert [e.msg_id for e in host.outbox.emits] == ["s0", "s1", "s2"]
    host.instance.next_tuple = lambda: (_ for _ in ()).throw(EndOfInput())
    host.exhausted = False
    host.next_tuple()
    assert host.exhausted


# -- ticks and batching --------------------------------------------------
def test_tick_interval_component_config_over_topology(echo):
    assert bolt(echo, "ticker").tick_interval_secs == 2.0
    assert bolt(echo, "echo").tick_interval_secs == 5.0
    assert (
        bolt(
            echo, "echo", conf_overrides={"topology.tick.tuple.freq.secs": None}
        ).tick_interval_secs
        is None
    )


def test_tick_reaches_process_tick_and_is_not_tracked(echo):
    host = bolt(echo, "ticker")
    feed(host, ["a", "b"])
    host.outbox.drain()
    host.tick()
    out = host.outbox.drain()
    assert [(e.values, e.anchors) for e in out.emits] == [([2], ())]
    assert out.acks == [] and out.fails == []


def test_batching_bolt_flushes_on_the_tick_after_the_one_that_filled_it(echo):
    host = bolt(echo, "batcher")  # ticks_between_batches = 2
    tuples = feed(host, ["a", "b", "a"])
    assert not host.outbox.emits and not host.outbox.acks
    host.tick()
    host.tick()
    assert not host.outbox.emits  # _tick_counter == 2 is not > 2
    host.tick()
    out = host.outbox.drain()
    assert sorted(e.values for e in out.emits) == [["a", 2], ["b", 1]]
    by_key = {e.values[0]: e.anchors for e in out.emits}
    assert by_key["a"] == (tuples[0].id, tuples[2].id) and by_key["b"] == (tuples[1].id,)
    assert sorted(out.acks) == sorted(t.id for t in tuples)
    with pytest.raises(TypeError):
        host.instance.emit(["x", 1], "default")  # BatchingBolt.emit takes keywords only


def test_batching_bolt_failure_fails_the_pending_batches(echo):
    host = bolt(echo, "batcher")
    tuples = feed(host, ["poison", "ok"])
    for _ in range(2):
        host.tick()
    with pytest.raises(ComponentFailure) as err:
        host.tick()
    assert err.value.call == "process_tick" and "poisoned batch" in str(err.value)
    out = host.outbox.drain()
    assert sorted(out.fails) == sorted(t.id for t in tuples) and out.acks == []
    assert not host.instance._batches  # failed tuples are never acked later


@pytest.mark.parametrize("name", ["tickless", "tickless_init"])
def test_tickless_batching_bolt_has_no_thread_and_flushes_on_demand(echo, name):
    threads = threading.active_count()
    handler = signal.getsignal(signal.SIGUSR1)
    thread_name = threading.current_thread().name
    host = bolt(echo, name)
    assert threading.active_count() == threads
    assert signal.getsignal(signal.SIGUSR1) == handler
    assert threading.current_thread().name == thread_name
    assert host.is_tickless and host.tickless_interval_secs == 0.5
    if name == "tickless_init":
        assert host.instance.made_in_init
    tuples = feed(host, ["a", "a"])
    host.tick()  # TicklessBatchingBolt ignores ticks
    assert not host.outbox.emits
    host.flush_tickless()
    out = host.outbox.drain()
    assert [(e.values, e.anchors) for e in out.emits] == [(["a", 2], tuple(t.id for t in tuples))]
    assert out.acks == [t.id for t in tuples]


# -- logging, wire, working dir -----------------------------------------
def test_logging_is_captured_per_task_and_never_reaches_root(echo, caplog):
    root = logging.getLogger()
    handlers = list(root.handlers)
    stdout = sys.stdout
    hosts = [
        bolt(echo, "logging_bolt"),
        bolt(echo, "logging_bolt", conf_overrides={"topology.debug": True}),
    ]
    with caplog.at_level(logging.INFO):
        feed(hosts[0], ["one"])
        feed(hosts[1], ["two"])
    assert root.handlers == handlers and sys.stdout is stdout
    first, second = (h.outbox.drain() for h in hosts)
    assert first.logs == [
        ("INFO", "stormshift.component.logging_bolt - got one"),
        ("WARN", "via storm log"),
    ]
    assert ("DEBUG", "stormshift.component.logging_bolt - debug detail") in second.logs
    assert all("two" not in msg for _, msg in first.logs)
    assert first.metrics == [("words", 1)]
    assert [r.getMessage() for r in caplog.records if "component" in r.name] == []


@pytest.mark.parametrize(
    "kind, match",
    [
        ("set", "field 'extra' is a set"),
        ("bytes", "field 'extra' is bytes"),
        ("nan", "field 'extra' is nan"),
        ("object", "field 'extra' is a builtins.object object"),
        ("nested", r"field 'extra' \['ok'\] \[1\] is a set"),
        ("bigint", "beyond 64 bits"),
        ("deep", r"field 'extra' (\[0\] )+\.\.\. is nested deeper than 100 lists/dicts"),
        ("cycle", r"nested deeper than 100 lists/dicts \(or contains itself\)"),
        ("arity", "declares 2 fields"),
        ("stream", r"undeclared stream 'nope'; declared streams are \['default'\]"),
    ],
)
def test_values_storm_cannot_send_are_tuple_errors(echo, kind, match):
    host = bolt(echo, "bad")
    with pytest.raises(ComponentFailure) as err:
        host.execute(host.new_tuple("words", "default", 1, [kind]))
    cause = err.value.cause
    assert isinstance(cause, TupleError) and cause.component == "bad"
    assert err.value.where.startswith("support.adapters_fixtures:")
    import re

    assert re.search(match, str(cause)), str(cause)
    assert host.outbox.drain().emits == []


def test_tuples_become_lists_and_wire_check_can_be_turned_off(echo):
    host = bolt(echo, "bad")
    host.execute(host.new_tuple("words", "default", 1, ["tuple"]))
    assert host.outbox.drain().emits[0].values == ["a", [1, 2]]
    loose = bolt(echo, "bad", check_wire=False)
    loose.execute(loose.new_tuple("words", "default", 1, ["set"]))
    assert loose.outbox.drain().emits[0].values == ["x", {1, 2}]


def test_emitted_containers_are_snapshotted(wc):
    host = bolt(wc, "count_bolt")
    payload = {"k": [1]}
    host.instance.emit(["w", payload])
    payload["k"].append(2)
    assert host.outbox.emits[0].values == ["w", {"k": [1]}]


def test_initialize_runs_in_the_working_dir(tmp_path, wc):
    import dataclasses

    graph = dataclasses.replace(wc, working_dir=str(tmp_path))
    seen: list[str] = []

    class Probe(pystorm.bolt.Bolt):
        def initialize(self, conf, ctx):
            seen.append(os.getcwd())

    here = os.getcwd()
    BoltHost(graph, "count_bolt", 0, component_class=Probe).open()
    assert seen == [str(tmp_path)] and os.getcwd() == here
    with working_dir(graph):
        assert os.getcwd() == str(tmp_path)
    assert os.getcwd() == here


def test_execute_many_hands_failures_over_and_goes_on(echo):
    host = bolt(echo, "echo")
    tuples = [host.new_tuple("words", "default", 1, [w]) for w in ["a1", "boom", "z"]]
    failures: list[ComponentFailure] = []
    assert host.execute_many(tuples, on_failure=failures.append) == 3
    assert [f.tup for f in failures] == [tuples[1]]
    assert host.outbox.acks == [tuples[0].id, tuples[2].id]
    with pytest.raises(ComponentFailure):
        host.execute_many([host.new_tuple("words", "default", 1, ["boom"])])


# -- against pystorm's own run loop --------------------------------------
def _pystorm_messages(cls, context, commands, tmp_path) -> list[dict[str, Any]]:
    """Run ``cls`` under pystorm's real multilang loop on an in-memory pipe."""
    text = "".join(json.dumps(c) + "\nend\n" for c in commands)
    out = io.BytesIO()
    out.close = lambda: None  # keep the bytes readable after the wrapper goes away
    inst = cls(input_stream=io.BytesIO(text.encode()), output_stream=out, rdb_signal=None)
    root = logging.getLogger()
    before = list(root.handlers)
    try:
        inst._setup_component({"pystorm.log.path": str(tmp_path), "topology.name": "t"}, context)
        inst.initialize({}, context)
        for _ in commands:
            try:
                inst._run()
            except Exception as exc:  # noqa: BLE001 - what Component.run does, minus the exit
                inst._handle_run_exception(exc)
    finally:
        for h in root.handlers[:]:
            if h not in before:
                root.removeHandler(h)
                h.close()
    inst.serializer.output_stream.flush()
    chunks = out.getvalue().decode().split("\nend\n")
    return [json.loads(c) for c in chunks if c.strip()]


def _first_wins(messages):
    done, acks, fails, emits = set(), [], [], []
    for m in messages:
        if m.get("command") in ("ack", "fail") and m["id"] not in done:
            done.add(m["id"])
            (acks if m["command"] == "ack" else fails).append(m["id"])
        elif m.get("command") == "emit":
            emits.append((m.get("stream", "default"), m["tuple"], tuple(m.get("anchors", ()))))
    return emits, acks, fails


@pytest.mark.parametrize(
    "name, words, ticks",
    [
        ("echo", ["ok", "fox", "apple", "boom", "zed"], 0),
        ("manual", ["a", "b", "c"], 0),
        ("batcher", ["a", "b", "a", "c"], 3),
        ("ticker", ["a", "b"], 1),
    ],
)
def test_outbox_matches_pystorms_own_pipe(echo, tmp_path, name, words, ticks):
    host = bolt(echo, name, tuple_ids=counter_ids(start=100))
    tuples = feed(host, words)
    commands = [
        {
            "id": t.id,
            "comp": t.component,
            "stream": t.stream,
            "task": t.task,
            "tuple": list(t.values),
        }
        for t in tuples
    ]
    tick_ids = []
    for _ in range(ticks):
        host.tick()
        tick_ids.append(str(100 + len(tuples) + len(tick_ids)))
    commands += [
        {"id": tid, "comp": "__system", "stream": "__tick", "task": -1, "tuple": []}
        for tid in tick_ids
    ]
    cls = type(host.instance)
    emits, acks, fails = _first_wins(_pystorm_messages(cls, host.context, commands, tmp_path))
    # Storm never tracks tick tuples: drop them from pystorm's side as the host does
    acks = [a for a in acks if a not in tick_ids]
    fails = [f for f in fails if f not in tick_ids]
    emits = [(s, v, tuple(a for a in anc if a not in tick_ids)) for s, v, anc in emits]
    assert emits and acks  # the comparison below is about real traffic
    ours = host.outbox
    assert [(e.stream, e.values, e.anchors) for e in ours.emits] == emits
    assert ours.acks == acks and ours.fails == fails


def test_need_task_ids_on_the_slow_path_reads_the_ids_pystorm_waits_for(wc):
    fast = bolt(wc, "split_bolt", tuple_ids=counter_ids())
    slow = bolt(wc, "split_bolt", tuple_ids=counter_ids(), fast=False)
    assert fast.fast_path and not slow.fast_path
    for host in (fast, slow):
        host.execute(host.new_tuple("sentence_spout", "default", 4, ["to be or not"]))
    assert slow.instance.task_ids_seen == fast.instance.task_ids_seen
    assert len(slow.instance.task_ids_seen) == 4
    assert shape(slow.outbox) == shape(fast.outbox)
    assert slow.outbox.logs == fast.outbox.logs


def test_spout_slow_path_emit_with_task_ids(wc):
    class CountingSpout(pystorm.spout.Spout):
        def emit(self, *args: Any, **kwargs: Any) -> Any:  # a user override: slow path
            self.last_ids = super().emit(*args, **kwargs)
            return self.last_ids

        def next_tuple(self) -> None:
            self.emit(["one two"], tup_id="m1", need_task_ids=True)

    host = SpoutHost(wc, "sentence_spout", 0, component_class=CountingSpout)
    host.open()
    assert not host.fast_path
    host.next_tuple()
    [emit] = host.outbox.emits
    assert (emit.values, emit.msg_id, emit.anchors) == (["one two"], "m1", ())
    assert host.instance.last_ids == host.router.task_ids(emit.targets)
