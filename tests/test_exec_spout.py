"""Executor-side spouts (``stormshift.spout.executor``): chunk planning and the chunk log.

The planner (``chunk_planner.py``) is driven as Spark's planner process drives it and
each batch's reads are done in this process as an executor does them
(``chunk_read.chunk_entries``), on a real Redis; ``forget_live_spouts`` is a read landing
on a fresh worker. The oracle is the spouts' own emit order (``chunktopo``).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import msgpack
import pytest

sys.path.insert(0, str(Path(__file__).parent / "spark_fixtures"))

import chunktopo
from support.processes import kill_and_wait

from stormshift.engines.spark.records.chunks import ChunkHead, ChunkLog
from stormshift.engines.spark.runtime.worker import redis_for
from stormshift.engines.spark.source.live_registry import SpoutNotDeterministic, forget_live_spouts
from stormshift.engines.spark.source.options import Opts, source_options
from stormshift.engines.spark.source.planner.chunk_planner import plan_chunks
from stormshift.engines.spark.source.planner.planner import make_planner
from stormshift.engines.spark.source.read.chunk_read import chunk_entries
from stormshift.topology.loader import load_topology

SPOUT = "numbers"


def opts_for(topology: Any, redis_url: str, namespace: str, *, batch: int,
             max_total: int | None = None, **conf: Any) -> Opts:
    chunktopo.STATS.update(next_tuple=0, acked=[], resumed=[])
    conf.setdefault("stormshift.spout.host", False)  # the instance in this process (STATS)
    graph = load_topology(topology, overrides=conf)
    return Opts.parse(source_options(graph, SPOUT, redis_url=redis_url, namespace=namespace,
                                     batch_max=batch, budget_ms=500, max_total=max_total, tick_ms=0))


def drive(opts: Opts, fresh_every: int = 0, retry_every: int = 0, max_batches: int = 500) -> list[list[int]]:
    """Spark's planner calls until ``fin``, every batch's reads in between; per task, the
    values read. ``fresh_every`` = k: every k-th batch's reads land on a fresh worker;
    ``retry_every`` = k: every k-th batch's reads run twice (a retried task)."""
    planner = make_planner(opts)
    par = opts.graph.component(SPOUT).par
    seen: list[list[int]] = [[] for _ in range(par)]
    start = planner.initial_offset()
    for batch in range(max_batches):
        if start.get("fin"):
            break
        end = planner.latest_offset(start)
        if fresh_every and batch % fresh_every == fresh_every - 1:
            forget_live_spouts()
        for part in planner.partitions(start, end):
            if part.number < 0:
                continue
            entries = chunk_entries(opts, part.task, part.number, part.limit)
            if retry_every and batch % retry_every == 0:
                again = chunk_entries(opts, part.task, part.number, part.limit)
                assert [tuple(e) for e in again] == [tuple(e) for e in entries]
            seen[part.task] += [msgpack.unpackb(e[2])[0] for e in entries]
        planner.commit(end)
        start = end
    else:
        raise AssertionError("no fin offset")
    return seen


def expected(par: int, limit: int) -> list[list[int]]:
    return [[i * chunktopo.STRIDE + j for j in range(limit)] for i in range(par)]


# -- pure: the planning ----------------------------------------------------------------
def _opts(batch: int = 10, max_total: int = -1) -> Any:
    class O:  # the fields plan_chunks reads
        spout, batch_max, tick_ms, drain_ticks = SPOUT, batch, 0, 4

    O.max_total = max_total  # type: ignore[attr-defined]
    return O()


def _start(par: int = 2) -> dict:
    return {"x": [0] * par, "s": [0] * par, "w": [False] * par, "e": [False] * par,
            "lim": [0] * par, "n": [0] * par, "done": False, "fin": False, "k": 0, "capped": False}


def test_plan_chunks_numbers_one_chunk_per_open_task_and_counts_it_a_batch_later() -> None:
    first = plan_chunks(_opts(), _start(), [None, None], [False, False])
    assert first["x"] == [1, 1] and first["w"] == [True, True] and first["lim"] == [10, 10]
    assert first["n"] == [0, 0] and not first["done"]
    heads = [ChunkHead(0, 10, False, b"", 9), ChunkHead(0, 4, True, b"", 3)]
    second = plan_chunks(_opts(), first, heads, [False, False])
    assert second["n"] == [10, 4] and second["s"] == [10, 4] and second["e"] == [False, True]
    assert second["x"] == [2, 1] and second["w"] == [True, False] and not second["done"]
    third = plan_chunks(_opts(), second, [ChunkHead(10, 2, True, b"", 11), None], [False, False])
    assert third["done"] and third["fin"] and third["n"] == [12, 4] and third["w"] == [False, False]


def test_plan_chunks_cuts_limits_at_max_tuples_and_caps_on_counts() -> None:
    first = plan_chunks(_opts(batch=10, max_total=13), _start(), [None, None], [False, False])
    assert first["lim"] == [7, 6]  # 13 split over two open tasks (task_targets)
    heads = [ChunkHead(0, 7, False, b"", 6), ChunkHead(0, 6, False, b"", 5)]
    second = plan_chunks(_opts(batch=10, max_total=13), first, heads, [False, False])
    assert second["capped"] and second["done"] and second["fin"] and second["n"] == [7, 6]


def test_plan_chunks_refuses_a_planned_chunk_that_was_never_logged() -> None:
    from stormshift.errors import StateError

    first = plan_chunks(_opts(), _start(1), [None], [False])
    with pytest.raises(StateError, match="chunk 0 was planned"):
        plan_chunks(_opts(), first, [None], [False])


def test_plan_chunks_takes_an_idle_task_as_ended() -> None:
    first = plan_chunks(_opts(), _start(1), [None], [False])
    second = plan_chunks(_opts(), first, [ChunkHead(0, 0, False, b"", None)], [True])
    assert second["e"] == [True] and second["done"]


# -- real Redis: reads as executors do them ---------------------------------------------
@pytest.mark.redis
def test_every_tuple_once_in_order_with_a_limit_per_chunk(redis_url: str, namespace: str) -> None:
    opts = opts_for(chunktopo.Counting, redis_url, namespace, batch=300, **{"chunk.per_call": 7})
    assert drive(opts) == expected(2, 1000)
    acked = chunktopo.STATS["acked"]
    assert len(acked) == len(set(acked)) and len(acked) >= 2 * 600  # all but the last chunks' acks


@pytest.mark.redis
def test_fresh_workers_and_retried_reads_read_the_same_tuples(redis_url: str, namespace: str) -> None:
    opts = opts_for(chunktopo.Counting, redis_url, namespace, batch=128, **{"chunk.per_call": 3})
    forget_live_spouts()
    assert drive(opts, fresh_every=2, retry_every=3) == expected(2, 1000)
    acked = set(chunktopo.STATS["acked"])  # each instance acks what it emitted or re-emitted
    assert acked <= {n for row in expected(2, 1000) for n in row} and len(acked) >= 2 * (1000 - 2 * 128)
    stats = [ChunkLog(redis_for(redis_url), namespace, SPOUT, i).stats() for i in range(2)]
    assert all(s["fresh"] >= 4 and s["replayed"] > 0 for s in stats), stats


@pytest.mark.redis
def test_max_tuples_is_exact_with_emits_past_the_limit(redis_url: str, namespace: str) -> None:
    opts = opts_for(chunktopo.Counting, redis_url, namespace, batch=100, max_total=333,
                    **{"chunk.per_call": 7})
    seen = drive(opts, fresh_every=3)
    assert sum(map(len, seen)) == 333
    assert seen == [row[:len(s)] for row, s in zip(expected(2, 1000), seen)]


@pytest.mark.redis
def test_a_resume_hook_seeks_instead_of_replaying(redis_url: str, namespace: str) -> None:
    opts = opts_for(chunktopo.Seeking, redis_url, namespace, batch=100)
    forget_live_spouts()
    assert drive(opts, fresh_every=2) == expected(1, 1000)
    assert chunktopo.STATS["resumed"][:2] == [99, 299]
    assert chunktopo.STATS["next_tuple"] <= 1000 + 20  # no replay from the start
    stats = ChunkLog(redis_for(redis_url), namespace, SPOUT, 0).stats()
    assert stats["resumed"] >= 4 and "replayed" not in stats, stats


@pytest.mark.redis
def test_a_spout_that_does_not_re_emit_the_same_ids_is_refused(redis_url: str, namespace: str) -> None:
    opts = opts_for(chunktopo.Random, redis_url, namespace, batch=100)
    forget_live_spouts()
    with pytest.raises(SpoutNotDeterministic) as err:
        drive(opts, fresh_every=2)
    text = str(err.value)
    assert "'numbers'" in text and "not deterministic" in text
    assert "planner path" in text and "resume(self, last_msg_id)" in text


# -- pure: bringing an instance to the head by replay -----------------------------------
def _live(**conf: Any) -> Any:
    from stormshift.adapters.host import SpoutHost
    from stormshift.engines.spark.protocol.layout import Layout
    from stormshift.engines.spark.source.live_spout import LiveSpout

    chunktopo.STATS.update(next_tuple=0, acked=[], resumed=[])
    graph = load_topology(chunktopo.Counting, overrides=conf or None)
    host = SpoutHost(graph, SPOUT, 0, colocated=Layout(graph).colocated(SPOUT))
    host.open()
    codes = {"default": Layout(graph).stream_code[(SPOUT, "default")]}
    return LiveSpout(host, SPOUT, codes, {c.name: c.first_task_id for c in graph}, None, None)


def _head(start: int, ids: list[int], ended: bool = False) -> ChunkHead:
    from stormshift.engines.spark.records.chunks import ids_digest

    return ChunkHead(start, len(ids), ended, ids_digest(ids), ids[-1] if ids else None)


def test_replay_accepts_the_logged_ids_and_keeps_what_a_call_emitted_past_the_chunk() -> None:
    live = _live(**{"chunk.per_call": 3})
    live.replay(0, _head(0, [0, 1, 2, 3, 4]))
    live.replay(1, _head(5, []))  # an empty chunk (the spout had nothing within the budget)
    assert (live.number, live.seq, [m for _, m in live.carry]) == (2, 5, [5])
    items, ended = live.collect(4, 100)
    assert [m for _, m in items] == [5, 6, 7, 8] and not ended
    assert [n for n, _ in live.unacked] == [0, 1]


def test_replay_refuses_other_ids_or_fewer_tuples_naming_the_spout_and_the_fix() -> None:
    with pytest.raises(SpoutNotDeterministic, match=r"'numbers' task 0 .*chunk 0 .*planner path"):
        _live().replay(0, _head(0, [0, 1, 7]))
    with pytest.raises(SpoutNotDeterministic, match="re-emitted 10 tuples where its log's chunk 0 holds 11"):
        _live(**{"chunk.limit": 10}).replay(0, _head(0, list(range(11))))


@pytest.mark.redis
def test_a_chunk_is_logged_once_and_a_zombie_attempt_is_fenced(redis_url: str, namespace: str) -> None:
    from stormshift.engines.spark.records.chunks import ids_digest
    from stormshift.errors import FencedError

    r = redis_for(redis_url)
    zombie, attempt = (ChunkLog(r, namespace, SPOUT, 0) for _ in range(2))
    zombie.take_epoch()
    attempt.take_epoch()
    head = ChunkHead(0, 1, False, ids_digest([7]), 7)
    with pytest.raises(FencedError):
        zombie.put(0, head, [(0, [2], b"\x91\x07")], [7])
    assert attempt.put(0, head, [(0, [2], b"\x91\x07")], [7])
    assert not attempt.put(0, head._replace(tuples=2), [(0, [2], b"\x91\x08")] * 2, [8, 9])
    assert attempt.payload(0) == ([[0, [2], b"\x91\x07"]], [7]) and attempt.head(0) == head
    attempt.ack_through(1, 0)
    assert attempt.payload(0) is None and attempt.head(0) == head and attempt.acked() == 1


# -- the spout host (``spout_host.py``): one live instance per task for every worker ------
def _in_other_process(opts: Opts, task: int, number: int, limit: int) -> list[Any]:
    """``chunk_entries`` in a process of its own: a read landing on another worker."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        return pool.apply(_read_in_child, (opts.raw, task, number, limit))


def _read_in_child(raw: dict, task: int, number: int, limit: int) -> list[Any]:
    return chunk_entries(Opts.parse(raw), task, number, limit)


@pytest.mark.redis
def test_reads_on_other_workers_do_not_replay_with_a_spout_host(redis_url: str, namespace: str,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from stormshift.engines.spark.runtime import hosts
    from stormshift.engines.spark.source.read import host_client

    monkeypatch.setenv(hosts.OWNER_ENV, str(os.getpid()))  # as the worker daemon does

    opts = opts_for(chunktopo.Counting, redis_url, namespace, batch=128,
                    **{"chunk.per_call": 3, "stormshift.spout.host": True})
    planner = make_planner(opts)
    seen: list[list[int]] = [[], []]
    start, batch = planner.initial_offset(), 0
    try:
        while not start.get("fin"):
            end = planner.latest_offset(start)
            for part in planner.partitions(start, end):
                if part.number < 0:
                    continue
                read = chunk_entries if batch % 2 else _in_other_process  # alternate workers
                entries = read(opts, part.task, part.number, part.limit)
                seen[part.task] += [msgpack.unpackb(e[2])[0] for e in entries]
            planner.commit(end)
            start, batch = end, batch + 1
        assert seen == expected(2, 1000) and batch > 8
        assert chunktopo.STATS["next_tuple"] == 0  # the spout ran in the host, not here
        stats = [ChunkLog(redis_for(redis_url), namespace, SPOUT, i).stats() for i in range(2)]
        assert stats == [{"fresh": 1}, {"fresh": 1}], stats  # one instance each, no replay
    finally:
        assert host_client.stop_hosts(os.getpid()) == 2
    deadline = time.monotonic() + 10  # a stopped host removes its files as it exits
    while (_host_pids(os.getpid()) or host_client.host_dir(os.getpid()).exists()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _host_pids(os.getpid()) and not host_client.host_dir(os.getpid()).exists()


@pytest.mark.redis
def test_a_dead_spout_host_is_replaced_by_one_that_catches_up(redis_url: str, namespace: str) -> None:
    import os

    from stormshift.engines.spark.source.read import host_client

    opts = opts_for(chunktopo.Counting, redis_url, namespace, batch=100,
                    **{"chunk.per_call": 3, "stormshift.spout.host": True})
    planner = make_planner(opts)
    seen: list[list[int]] = [[], []]
    start, batch = planner.initial_offset(), 0
    try:
        while not start.get("fin"):
            end = planner.latest_offset(start)
            if batch == 4:  # every host dies: the next reads start new ones, which replay
                kill_and_wait(_host_pids(os.getpid()),  # gone, not only signalled
                              host_client.host_dir(os.getpid()).glob("*.sock"))
            for part in planner.partitions(start, end):
                if part.number >= 0:
                    entries = chunk_entries(opts, part.task, part.number, part.limit)
                    seen[part.task] += [msgpack.unpackb(e[2])[0] for e in entries]
            planner.commit(end)
            start, batch = end, batch + 1
        assert seen == expected(2, 1000)
        stats = [ChunkLog(redis_for(redis_url), namespace, SPOUT, i).stats() for i in range(2)]
        assert all(s["fresh"] == 2 and s["replayed"] == 400 for s in stats), stats
    finally:
        host_client.stop_hosts(os.getpid())


def _host_pids(owner: int) -> list[int]:
    """Spout hosts of ``owner`` (their command line names the module and the owner)."""
    import subprocess

    from stormshift.engines.spark.source.read.host_client import HOST_MODULE

    out = subprocess.run(["ps", "-ww", "-eo", "pid=,args="], capture_output=True, text=True, check=True).stdout
    return [int(line.split()[0]) for line in out.splitlines()
            if HOST_MODULE in line and line.split()[-1] == str(owner)]


def test_frames_split_anywhere_decode_to_the_same_messages() -> None:
    from stormshift.engines.spark.source.host_wire import decode_frames, encode_frame

    msgs = [{"op": "chunk", "number": 3}, {"entries": [[1, [2, 3], b"\x91\x07"]] * 50}, {}]
    wire = b"".join(encode_frame(m) for m in msgs)
    for cut in range(len(wire) + 1):
        first, rest = decode_frames(wire[:cut])
        second, left = decode_frames(rest + wire[cut:])
        assert first + second == msgs and left == b""


def test_a_pending_chunk_settles_only_against_the_same_logged_chunk_and_no_chunk_goes_out_twice() -> None:
    from stormshift.engines.spark.records.chunks import ids_digest
    from stormshift.engines.spark.source.spouthost.spout_host import Pending, next_step, settle

    mine = Pending(4, ChunkHead(40, 3, False, ids_digest([1, 2, 3]), 3), [1, 2, 3])
    assert settle(mine, mine.head)
    assert settle(mine, mine.head._replace(ended=True))  # a deterministic twin's write
    assert not settle(mine, None)  # the worker died before logging it
    assert not settle(mine, mine.head._replace(tuples=2, digest=ids_digest([1, 2])))
    assert next_step(5, 4, logged=True) == "reread"  # handed out once: the log has it
    assert next_step(5, 4, logged=False) == "emit"  # off the log: rebuilt (live_spout._at_head)
    assert next_step(4, 4, logged=False) == next_step(None, 4, logged=False) == "emit"
