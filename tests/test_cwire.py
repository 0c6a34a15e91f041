"""The C data plane against the pure one it replaces, which stays: the row wire
(``engines/spark/dataplane/cwire.pyx``), the kernel's loop (``adapters/ckernel.pyx``) and a
bolt's emit (``adapters/cemit.pyx``).

Decoding a row cell in C must give what msgpack gives (values namedtuples where a value
list has the stream's arity), the Tuples built in C must equal ``tuple.__new__``'s, and
``pack`` must give msgpack's bytes and errors. Then the same stages run on both paths
(real Redis, ``run_partition``): equal rows, byte for byte, and equal Tuples in the kernel.
"""

from __future__ import annotations

import math
import random
import sys
import uuid
from collections import namedtuple
from pathlib import Path
from typing import Any

import msgpack
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from streamparse import Grouping, Topology
from support.adapters_fixtures import GroupingsTopology, KeyedTopology, PairSpout, Sink

from stormshift import native
from stormshift.adapters import host_component
from stormshift.adapters import kernel as K
from stormshift.adapters.retry_policy import Outcome
from stormshift.adapters.tuples import Tuple
from stormshift.engines.spark.protocol import rows as R
from stormshift.engines.spark.task import output as O
from stormshift.topology.loader import load_topology

sys.path.insert(0, str(Path(__file__).parent / "spark_fixtures"))
import outtopo

CWIRE = native.load("stormshift.engines.spark.dataplane.cwire")
CKERNEL = native.load("stormshift.adapters.ckernel")
CEMIT = native.load("stormshift.adapters.cemit")
needs_c = pytest.mark.skipif(None in (CWIRE, CKERNEL, CEMIT),
                             reason="the data plane's .pyx modules are not built here, or STORMSHIFT_PURE names one")
PACK = msgpack.Packer(use_bin_type=True).pack
V3 = namedtuple("V3", "a b c")


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(14 if depth < 3 else 10)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice((True, False))
    if kind == 2:
        return rng.choice((0, 1, -1, 127, 128, 255, 256, -32, -33, -128, -129, 65535, 65536,
                           -32768, -32769, 2**32 - 1, 2**32, -2**31, -2**31 - 1, 2**63 - 1,
                           -2**63, 2**64 - 1, rng.randrange(-2**63, 2**64)))
    if kind == 3:
        return rng.choice((0.0, -0.0, 1.5, 1e300, -2.5e-300, float("inf"), rng.random()))
    if kind in (4, 5):
        n = rng.choice((0, 1, 5, 31, 32, 255, 256, 70000))
        return ("".join(rng.choice("aZ é☃𝄞\x00") for _ in range(min(n, 40))) * (n // 40 + 1))[:n]
    if kind == 6:
        return bytes(rng.randrange(256) for _ in range(rng.choice((0, 3, 300))))
    if kind in (7, 8, 9):
        return rng.choice(("", [], {}, ()))
    if kind in (10, 11):
        return [_value(rng, depth + 1) for _ in range(rng.choice((0, 2, 17)))]
    if kind == 12:
        return tuple(_value(rng, depth + 1) for _ in range(rng.randrange(4)))
    return {rng.choice(("k", "é", 1, 2.5, None, True)): _value(rng, depth + 1)
            for _ in range(rng.choice((0, 1, 3, 20)))}


def _values_lists(seed: int, n: int) -> list[Any]:
    rng = random.Random(seed)
    return [[_value(rng) for _ in range(rng.choice((3, 3, 3, 0, 1, 4)))] for _ in range(n)]


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same types all the way down (NaN equal to NaN; a values type by
    name: each host makes its own)."""
    if (type(a).__module__, type(a).__qualname__) != (type(b).__module__, type(b).__qualname__):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


@needs_c
@pytest.mark.parametrize("seed", range(8))
def test_pack_gives_msgpacks_bytes_and_errors(seed: int) -> None:
    for values in _values_lists(seed, 200) + [[2**64], [-2**63 - 1], [{1, 2}], ["\ud800"],
                                              [float("nan")], [object()], [bytearray(b"x")]]:
        for form in (values, tuple(values), V3(*values) if len(values) == 3 else values):
            try:
                want: Any = PACK(form)
            except Exception as exc:  # noqa: BLE001 - the error itself is compared
                want = type(exc)
            try:
                got: Any = CWIRE.pack(form)
            except Exception as exc:  # noqa: BLE001
                got = type(exc)
            assert got == want, form


@needs_c
@pytest.mark.parametrize("seed", range(8))
def test_a_cell_decodes_to_msgpacks_values_as_namedtuples_of_the_streams_arity(seed: int) -> None:
    lists = _values_lists(seed, 64)
    cell = msgpack.packb(lists, use_bin_type=True)
    want = msgpack.unpackb(cell, raw=False, strict_map_key=False)
    for vtype, arity in ((V3, 3), (None, -1)):
        got = CWIRE.unpack_chunk(memoryview(cell), vtype, arity)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            expect = V3(*w) if vtype is not None and len(w) == 3 else w
            assert _same(g, expect)
            # and the Tuple built from either form equals tuple.__new__'s
            if len(w) == 3:
                pure = tuple.__new__(Tuple, ("1:2:3", "src", "side", 7, tuple.__new__(V3, w)))
                for values in (g if vtype is not None else w, w):
                    built = CKERNEL.make_tuple("1:2:3", "src", "side", 7, V3, values)
                    assert type(built) is Tuple and type(built.values) is V3
                    assert _same(built, pure)


@needs_c
def test_a_cell_msgpack_must_decide_gives_msgpacks_result_or_error() -> None:
    ext = msgpack.packb([[msgpack.ExtType(1, b"ab"), 1, 2], [1, 2, 3]])
    assert CWIRE.unpack_chunk(ext, V3, 3) == msgpack.unpackb(ext)
    good = msgpack.packb([[1, 2, 3]])
    for bad, error in ((good + b"\x01", msgpack.ExtraData), (good[:-1], ValueError),
                       (b"\x91\xa1\xff", UnicodeDecodeError)):
        with pytest.raises(error):
            CWIRE.unpack_chunk(bad, V3, 3)
        with pytest.raises(error):
            msgpack.unpackb(bad, raw=False, strict_map_key=False)


def _written(script: list[Any], c_writer: bool, monkeypatch: Any) -> pa.Table:
    """The rows ``RowBuilder.writer`` makes of ``script`` (C ``Writer`` or the closure), with
    a mark and rewind midway."""
    if not c_writer:
        monkeypatch.setattr(R, "_CWIRE", None)
    out = R.RowBuilder()
    writers = {src: out.writer(src) for src in (11, 12)}
    mark = None
    for i, (src, sid, dests, v) in enumerate(script):
        if i == len(script) // 3:
            mark = out.mark()
        if i == len(script) // 2:
            out.rewind(mark)  # type: ignore[arg-type]
        writers[src](sid, v, dests)
    monkeypatch.undo()
    return pa.Table.from_batches(list(out.batches()))


@needs_c
@pytest.mark.parametrize("seed", range(4))
def test_the_c_writer_makes_the_closures_rows(seed, monkeypatch):
    rng = random.Random(seed)
    script, src, sid = [], 11, 0
    for i in range(3000):
        if rng.randrange(20) == 0:
            src = rng.choice((11, 12))
        if rng.randrange(20) == 0:
            sid = rng.choice((0, 1, 300))
        size = rng.choice((1, 10, 100, 60000))  # 60 kB values close chunks by bytes
        dests = tuple(sorted(rng.sample((21, 22, 23), rng.randrange(4))))
        script.append((src, sid, dests, PACK([i, "x" * size])))
    want = _written(script, False, monkeypatch)
    got = _written(script, True, monkeypatch)
    assert want.num_rows > 100 and got.equals(want)


def _kernel_tuples(chunks: list[Any], raw: bool, monkeypatch: Any) -> list[Any]:
    """The Tuples a real hosted bolt receives from ``chunks`` (value lists), and the
    outcomes: raw cells through C (``raw``) or decoded lists through the pure path."""
    if not raw:
        monkeypatch.setattr(K, "_MAKE", None)
        monkeypatch.setattr(K, "_CKERNEL", None)
    graph = load_topology(GroupingsTopology)
    host = host_component(graph, "by_field", 0)
    host.open()
    got: list[Any] = []
    host.instance.process = got.append  # records what process() receives
    kernel = K.Kernel(host, lambda emits: emits.clear(), [])
    streams = {0: "default", 1: "direct"}
    cells = [(src, sid, msgpack.packb(v, use_bin_type=True)) for src, sid, v in chunks]
    fed = [(src, sid, memoryview(c) if raw else msgpack.unpackb(c, raw=False, strict_map_key=False))
           for src, sid, c in cells]  # the pure path gets what rows.iter_chunks decodes
    outcomes: list[Any] = []
    n = kernel.run_chunks(fed, lambda src, sid: ("pairs", streams[sid]), "9:0:", {"9:0:3": 1},
                          lambda tid: None, lambda tup, o, d: outcomes.append((tup, o)),
                          unpack=R.UNPACK)
    monkeypatch.undo()
    return [n, got, outcomes]


@needs_c
@pytest.mark.parametrize("seed", range(4))
def test_the_kernel_gets_equal_tuples_from_raw_cells_and_from_decoded_lists(seed, monkeypatch):
    rng = random.Random(seed)
    chunks = []
    for _ in range(12):
        lists = [[_value(rng) for _ in range(rng.choice((2, 2, 2, 1, 3)))]
                 for _ in range(rng.randrange(1, 33))]
        chunks.append((rng.choice((3, 4)), rng.choice((0, 1)), lists))
    pure = _kernel_tuples(chunks, False, monkeypatch)
    native_ = _kernel_tuples(chunks, True, monkeypatch)
    assert pure[0] == native_[0] == sum(len(c[2]) for c in chunks)
    assert _same(pure[1], native_[1]) and len(pure[1]) > 0
    assert {type(t.values).__name__ for t in native_[1]} == {"PairsDefaultTuple", "PairsDirectTuple"}
    assert [(t.id, o) for t, o in pure[2]] == [(t.id, o) for t, o in native_[2]]
    assert all(o is Outcome.ARITY for _, o in native_[2]) and native_[2]
    assert _same([t.values for t, _ in pure[2]], [t.values for t, _ in native_[2]])


def _delivered(script: list[Any], c_deliver: bool, monkeypatch: Any) -> list[Any]:
    """What ``MemberOutput.deliver`` (``cwire.Deliver`` or the closure) makes of ``script``
    for encoder task 0 of ``EncodeTopo`` (rows to ``totals``, or its fused queue) and for a
    leaf member: rows, queues, leaves, errors kept, counts, with a settle midway."""
    from stormshift.engines.spark.protocol.layout import Layout
    from stormshift.engines.spark.task.counters import MemberStats

    if not c_deliver:
        monkeypatch.setattr(O, "_CWIRE", None)
    layout = Layout(load_topology(outtopo.EncodeTopo))
    out = R.RowBuilder()
    queues: dict[str, list[Any]] = {"totals": []}
    members = {"rows": O.MemberOutput(layout, "encoder", 0, out, {}, True, MemberStats()),
               "fused": O.MemberOutput(layout, "encoder", 0, out, queues, True, MemberStats()),
               "leaf": O.MemberOutput(layout, "totals", 0, out, {}, True, MemberStats())}
    for i, (member, stream, values, targets) in enumerate(script):
        members[member].deliver(stream, values, targets)
        if i == len(script) // 2:
            for m in members.values():
                m.settle()
    for m in members.values():
        m.settle()
    monkeypatch.undo()
    return [pa.Table.from_batches(list(out.batches())), queues,
            [m.leaves for m in members.values()],
            [[(type(e), str(e)) for e in m.bad] for m in members.values()],
            [(m.stats.tuples_out, m.stats.leaf) for m in members.values()]]


@needs_c
@pytest.mark.parametrize("seed", range(4))
def test_the_c_deliver_gives_the_closures_rows_queues_leaves_errors_and_counts(seed, monkeypatch):
    rng = random.Random(seed)
    shared = [(("totals", 0),), (("totals", 1),), (("totals", 0), ("totals", 1))]
    script = []
    for i in range(3000):
        member = rng.choice(("rows", "rows", "fused", "leaf"))
        values: Any = [rng.choice(("k", "é", "x" * rng.choice((1, 60000)))), i]
        if rng.randrange(30) == 0:  # msgpack's errors: kept in bad, the emit dropped
            values[1] = rng.choice(("\ud800", {1, 2}, 2**70))
        if rng.randrange(4) == 0:
            values = tuple(values)  # an emitted tuple: what is kept is a list
        if member == "leaf" or rng.randrange(40) == 0:
            targets: Any = ()
        else:  # the same targets object (as routes give), or an equal copy
            targets = rng.choice(shared)
            if rng.randrange(3) == 0:
                targets = tuple(tuple(t) for t in targets)
        stream = "default" if member != "leaf" or rng.randrange(10) else "nowhere"
        script.append((member, stream, values, targets))
    pure = _delivered(script, False, monkeypatch)
    native_ = _delivered(script, True, monkeypatch)
    assert pure[0].num_rows > 10 and native_[0].equals(pure[0])
    assert _same(native_[1], pure[1]) and native_[1]["totals"]
    assert _same(native_[2], pure[2]) and pure[2][2]
    assert native_[3] == pure[3] and pure[3][0]
    assert native_[4] == pure[4] and pure[4][2][1] > 0


def _emitted(calls: list[Any], c_emit: bool, monkeypatch: Any) -> list[Any]:
    """What a hosted bolt's fast ``emit`` (``cemit.BoltEmit`` or the closure) hands its
    ``deliver`` for each call (task 1 of 2), and what each call returns or raises."""
    from stormshift.adapters import fastpath as F

    if not c_emit:
        monkeypatch.setattr(F, "_CEMIT", None)
    host = host_component(load_topology(outtopo.ShuffledKeyTopo), "encoder", 1)
    got: list[Any] = []
    host.deliver_to(lambda stream, values, targets: got.append((stream, list(values), targets)))
    results: list[Any] = []
    for args, kwargs in calls:
        try:
            results.append(host.instance.emit(*args, **kwargs))
        except Exception as exc:  # noqa: BLE001 - the error itself is compared
            results.append((type(exc), str(exc)))
    monkeypatch.undo()
    return [got, results]


@needs_c
@pytest.mark.parametrize("seed", range(4))
def test_the_c_emit_routes_checks_and_delivers_as_the_closure(seed, monkeypatch):
    rng = random.Random(seed)
    odd = (float("nan"), float("inf"), 2**63, -2**63 - 1, 2**63 - 1, -2**63, True, None, 1.5,
           b"raw", {"a": 1}, [1, 2], {1}, object, "\ud800", 10**30, -0.0)
    calls: list[Any] = []
    for i in range(400):
        key = rng.choice(("a", "b", "c", str(i), i, 2.5))
        values: Any = [key, rng.choice(odd) if rng.randrange(3) == 0 else i]
        if rng.randrange(5) == 0:
            values = tuple(values)
        if rng.randrange(25) == 0:
            values = values[:1]  # the wrong arity
        kwargs: dict[str, Any] = {}
        if rng.randrange(10) == 0:
            kwargs["stream"] = rng.choice(("default", "undeclared"))
        if rng.randrange(10) == 0:
            kwargs["need_task_ids"] = True
        if rng.randrange(30) == 0:
            kwargs["direct_task"] = 3
        calls.append(((values,), kwargs))
    calls += [((["k", 1], "default", None, None, True), {}), (("not a list",), {})]
    pure = _emitted(calls, False, monkeypatch)
    native_ = _emitted(calls, True, monkeypatch)
    assert _same(native_[0], pure[0]) and len(pure[0]) > 100
    assert repr(native_[1]) == repr(pure[1])
    assert any(isinstance(r, tuple) for r in pure[1]) and any(isinstance(r, list) for r in pure[1])


class OneKeyTopology(Topology):
    """A keyed stream whose memo has one level: one grouping field, beside a global."""

    pairs = PairSpout.spec(par=2)
    by_key = Sink.spec(inputs={pairs: Grouping.fields("key")}, par=4)
    to_global = Sink.spec(inputs={pairs: Grouping.GLOBAL}, par=3)


def _routed(topology: Any, rows: list[Any], c_route: bool, monkeypatch: Any) -> list[Any]:
    """``Router.route`` of each row, twice (the second pass reads the memo), pairs task 1:
    the targets, or the error's type and text; and the seq after."""
    from stormshift.adapters import routing

    if not c_route:
        monkeypatch.setattr(routing, "_CEMIT", None)
    router = routing.Router(load_topology(topology), "pairs", 1)
    monkeypatch.undo()
    got: list[Any] = []
    for _pass in range(2):
        for values, direct in rows:
            try:
                got.append(router.route("default", values, direct))
            except Exception as exc:  # noqa: BLE001 - the error itself is compared
                got.append((type(exc), str(exc)))
    return [got, router.seq("default")]


class Key(str):
    """A str subclass: equal to its str, never memoized."""


@needs_c
@pytest.mark.parametrize("topology", [KeyedTopology, OneKeyTopology])
def test_the_c_keyed_route_picks_the_closures_targets(topology, monkeypatch):
    rng = random.Random(7)
    keys = [f"user-{i}" for i in range(50)] + ["", "é", 1, 1.0, True, None, -3, 2**70, (1, 2)]
    rows: list[Any] = []
    for _ in range(600):
        values: Any = [rng.choice(keys), rng.choice(keys)]
        if rng.randrange(10) == 0:
            values[rng.randrange(2)] = Key(rng.choice(("user-1", "zz")))
        if rng.randrange(20) == 0:
            values[rng.randrange(2)] = rng.choice(([1, "a"], {"a": 1}, object()))
        if rng.randrange(30) == 0:
            values = values[:1]
        if rng.randrange(4) == 0:
            values = tuple(values)
        rows.append((values, 3 if rng.randrange(40) == 0 else None))
    pure = _routed(topology, rows, False, monkeypatch)
    native_ = _routed(topology, rows, True, monkeypatch)
    assert native_[1] == pure[1] > 1000  # emits past the checks each took a seq
    assert repr(native_[0]) == repr(pure[0])
    assert any(type(t) is tuple and type(t[0]) is type for t in pure[0])
    # equal targets from the memo are one object (cwire.Deliver finds its plan by identity)
    memoized = [t for t, (values, direct) in zip(native_[0][len(rows):], rows)
                if direct is None and len(values) == 2 and all(type(v) is str for v in values)]
    assert len({id(t) for t in memoized}) == len(set(memoized)) and len(memoized) > 100


def _stage_rows(redis_url: str, monkeypatch: Any, raw: bool) -> tuple[pa.Table, list[pa.Table]]:
    """VariedTopo's two stages on one path: the varied stage's rows, then each totals
    task's rows (its input: the varied stage's rows for it, with a beacon)."""
    from stormshift.engines.spark.protocol.layout import Layout
    from stormshift.engines.spark.task.sink import SinkSpec
    from stormshift.engines.spark.task.stage import StageJob, run_partition

    if not raw:
        from stormshift.adapters import fastpath as F

        for module, name in ((K, "_MAKE"), (K, "_CKERNEL"), (O, "_CWIRE"), (R, "_CWIRE"),
                             (R, "UNPACK"), (F, "_CEMIT")):
            monkeypatch.setattr(module, name, None)
        monkeypatch.setattr(R, "RAW_CELLS", False)
    layout = Layout(load_topology(outtopo.VariedTopo))
    namespace = f"test-cwire-{uuid.uuid4().hex[:10]}"
    jobs = {s.head: StageJob(layout, s, 1, frozenset(), redis_url, namespace, b"k", SinkSpec("drop"))
            for s in layout.stages}
    numbers = list(range(len(outtopo.VARIED) * 4))
    first = pa.Table.from_batches(list(run_partition(jobs, iter(outtopo.encoder_rows(
        layout, numbers, head="varied")))))
    seconds = []
    for task in range(2):
        dest = layout.first_task("totals") + task
        mine = first.filter(pc.equal(first.column("dest"), dest))
        beacon = R.to_batch(*[[x] for x in R.beacon_row(dest)])
        out = list(run_partition(jobs, iter([beacon, *mine.to_batches()])))
        seconds.append(pa.Table.from_batches(out, schema=R.SCHEMA))
    monkeypatch.undo()
    import redis

    r = redis.Redis.from_url(redis_url)
    for key in r.scan_iter(f"*{namespace}*"):
        r.delete(key)
    return first, seconds


@needs_c
def test_stages_send_the_same_rows_byte_for_byte_on_both_paths(redis_url, monkeypatch):
    pure = _stage_rows(redis_url, monkeypatch, raw=False)
    native_ = _stage_rows(redis_url, monkeypatch, raw=True)
    assert pure[0].num_rows > 0 and all(t.num_rows > 0 for t in pure[1])
    assert pure[0].equals(native_[0])
    for p, n in zip(pure[1], native_[1]):
        assert p.equals(n)
    # what the totals stage re-emitted is what the varied stage sent, both streams
    sent = sorted(repr(v) for _, _, v in R.iter_rows(pure[0]))
    echoed = sorted(repr(v) for t in native_[1] for _, _, v in R.iter_rows(t))
    assert sent == echoed and len(sent) == 2 * len(outtopo.VARIED) * 4


def test_decoded_chunks_give_iter_chunks_value_lists_whichever_way_cells_come():
    """The fault point ``task.midway`` counts and cuts value lists: raw cells are decoded first."""
    out = R.RowBuilder()
    for i in range(100):
        out.add(21, 11 + i % 2, i, 0, PACK([i, "é" * (i % 3), [i, None]]))
    table = pa.Table.from_batches(list(out.batches()))
    want = list(R.iter_chunks(table))
    assert list(R.decoded_chunks(R.iter_input(table))) == want
    assert list(R.decoded_chunks(want)) == want and len(want) > 2
