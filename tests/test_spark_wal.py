"""The spout write-ahead log on real Redis: chunks, ranges, trim, fencing."""

from __future__ import annotations

import msgpack
import pytest

from stormshift.engines.spark.records.wal import WriteAheadLog
from stormshift.errors import FencedError, StateError
from stormshift.state.connection import connect

pytestmark = pytest.mark.redis


def entries(lo: int, hi: int) -> list[tuple[int, list[int], bytes]]:
    return [(0, [7, 8], f"v{i}".encode()) for i in range(lo, hi)]


def test_ranges_cross_chunks_in_order(redis_url, namespace):
    wal = WriteAheadLog(connect(redis_url), namespace, "spout", 0)
    head = wal.open_for_append()
    assert head == 0
    head = wal.append(head, entries(0, 5))
    head = wal.append(head, entries(5, 12))
    assert head == 12 and wal.head() == 12
    got = [e[2] for e in wal.read(3, 9)]
    assert got == [f"v{i}".encode() for i in range(3, 9)]
    assert [list(e[1]) for e in wal.read(0, 1)] == [[7, 8]]
    assert list(wal.read(12, 12)) == []


def test_trim_keeps_uncommitted_tail(redis_url, namespace):
    wal = WriteAheadLog(connect(redis_url), namespace, "spout", 1)
    head = wal.append(wal.open_for_append(), entries(0, 5))
    head = wal.append(head, entries(5, 10))
    wal.trim(5)
    assert [e[2] for e in wal.read(5, 10)] == [f"v{i}".encode() for i in range(5, 10)]
    assert wal.head() == 10


def test_fully_trimmed_log_keeps_its_head(redis_url, namespace):
    """Every chunk committed and trimmed: a new planner continues after the last seq."""
    r = connect(redis_url)
    wal = WriteAheadLog(r, namespace, "spout", 5)
    head = wal.append(wal.open_for_append(), entries(0, 6))
    wal.trim(6)
    assert r.xlen(wal.key) == 0
    again = WriteAheadLog(r, namespace, "spout", 5)
    assert again.open_for_append() == 6
    assert again.append(6, entries(6, 9)) == 9 == head + 3
    assert [e[2] for e in again.read(6, 9)] == [f"v{i}".encode() for i in range(6, 9)]


def test_zombie_planner_is_fenced_and_gaps_refused(redis_url, namespace):
    r = connect(redis_url)
    old = WriteAheadLog(r, namespace, "spout", 2)
    head = old.append(old.open_for_append(), entries(0, 3))
    new = WriteAheadLog(r, namespace, "spout", 2)
    assert new.open_for_append() == head
    with pytest.raises(FencedError):
        old.append(head, entries(3, 4))
    with pytest.raises(StateError, match="overlap"):
        new.append(head - 1, entries(2, 4))
    assert new.append(head, entries(3, 4)) == 4


def _keyed(start: int, stop: int, salt: bytes = b"") -> tuple[list, list]:
    from stormshift.engines.spark.records.wal import content_digest

    rows = entries(start, stop)
    keys = [(msgpack.packb(n), content_digest(code, packed + salt)) for n, (code, _t, packed) in zip(range(start, stop), rows)]
    return rows, keys


def test_replayed_msg_ids_are_found_with_the_seq_of_their_original(redis_url, namespace):
    wal = WriteAheadLog(connect(redis_url), namespace, "spout", 3, seen_window=4)
    head = wal.open_for_append()
    for lo in range(0, 12, 3):  # 4 chunks over 3 buckets of 4 seqs
        rows, keys = _keyed(lo, lo + 3)
        head = wal.append(head, rows, keys)
    assert head == 12
    _rows, keys = _keyed(0, 12)
    found = wal.replays(keys)
    # bucket = seq // 4; at head 12 the window is buckets 3 (empty) and 2 (seqs 8..11):
    # at least seen_window tuples back, at most twice that
    assert found[8:] == [8, 9, 10, 11]
    assert found[:8] == [None] * 8
    assert not r_exists(wal, 0)  # bucket 0 was deleted when bucket 2 began
    # same msg id, other content: a new tuple, not a replay
    _rows, other = _keyed(8, 12, salt=b"x")
    assert wal.replays(other) == [None] * 4
    assert wal.replays([None]) == [None]


def r_exists(wal: WriteAheadLog, bucket: int) -> bool:
    return bool(wal.r.exists(wal._bucket(bucket * wal.seen_window)))


def test_msg_keys_land_with_their_chunk_or_not_at_all(redis_url, namespace):
    r = connect(redis_url)
    old = WriteAheadLog(r, namespace, "spout", 4)
    head = old.append(old.open_for_append(), *_keyed(0, 3))
    WriteAheadLog(r, namespace, "spout", 4).open_for_append()  # a newer planner fences the old one
    with pytest.raises(FencedError):
        old.append(head, *_keyed(3, 5))
    assert old.replays(_keyed(3, 5)[1]) == [None, None]  # neither the chunk nor its ids
    assert old.replays(_keyed(0, 3)[1]) == [0, 1, 2]
