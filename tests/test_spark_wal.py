"""The spout write-ahead log on real Redis: chunks, ranges, trim, fencing."""

from __future__ import annotations

import pytest

from stormshift.errors import FencedError, StateError
from stormshift.state.connection import connect
from stormshift.state.wal import WriteAheadLog

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
