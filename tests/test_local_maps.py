"""Keyed state maps on the local engine (``stormshift/engines/local/maps.py``): every kind of
write a bolt can make lands in the in-memory map, read back as Spark would commit it. The
engine end to end: ``tests/conformance`` (scenario ``keyed_maps`` on both engines)."""

from __future__ import annotations

import pytest

from stormshift.engines.local.maps import LocalMaps
from stormshift.errors import StateError
from stormshift.state.maps import enter_scope, leave_scope, opaque_map, transactional_map


def test_every_write_kind_lands_and_reads_back() -> None:
    maps = LocalMaps()
    sums, counts = opaque_map("sums"), transactional_map("counts")
    token = enter_scope(maps)
    try:
        sums.increment("a", 2)
        sums.put("b", 5)
        sums.increment("b", 1)
        assert sums.update("c", lambda v: v + 1, default=0) == 1
        assert sums.get_many(["a", "b", "c", "z"], default=0) == [2, 6, 1, 0]
        counts.increment("a")
        counts.increment("a")
    finally:
        leave_scope(token)
    token = enter_scope(maps)  # a later call into the bolt sees what the first one wrote
    try:
        sums.increment("a", 3)
        assert sums.get("a") == 5
    finally:
        leave_scope(token)
    assert maps.values() == {"sums": {"a": 5, "b": 6, "c": 1}, "counts": {"a": 2}}


def test_outside_a_call_a_map_still_refuses() -> None:
    with pytest.raises(StateError, match="outside a task batch"):
        opaque_map("sums").increment("a")
