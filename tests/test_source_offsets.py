"""The planners' offsets as pure functions (``engines/spark/source/planner/offsets.py``).

The ack count ``a``: with nothing new to plan while planned tuples wait for their acks,
the offset moves anyway, so Spark plans one empty batch and commits the last data batch
(a source's batch is committed only when the next is planned); the spout then gets its
acks. A spout that ends only once acked would otherwise hang, or be taken as idle.
"""

from __future__ import annotations

from stormshift.engines.spark.source.options import Opts
from stormshift.engines.spark.source.planner.offsets import next_offset


def _opts(tick_ms: int = 0) -> Opts:
    return Opts(graph=None, spout="numbers", redis_url="", namespace="t", batch_max=10,
                budget_ms=5, max_total=-1, tick_ms=tick_ms)


def test_nothing_new_with_tuples_in_flight_moves_the_offset_once_per_plan() -> None:
    start = {"t": [4], "n": [4], "done": False, "fin": False, "k": 0, "capped": False}
    first = next_offset(_opts(), start, "t", [4], False, True, [4], False, in_flight=True)
    assert first != start and first["a"] == 1 and first["t"] == [4]
    second = next_offset(_opts(), first, "t", [4], False, True, [4], False, in_flight=True)
    assert second["a"] == 2


def test_nothing_new_and_nothing_in_flight_leaves_the_offset_unchanged() -> None:
    start = {"t": [4], "n": [4], "done": False, "fin": False, "k": 0, "capped": False, "a": 3}
    same = next_offset(_opts(), start, "t", [4], False, True, [4], False, in_flight=False)
    assert same == start


def test_new_tuples_or_end_of_input_never_add_an_ack_batch() -> None:
    start = {"t": [4], "n": [4], "done": False, "fin": False, "k": 0, "capped": False}
    more = next_offset(_opts(), start, "t", [9], False, False, [9], False, in_flight=True)
    assert more["a"] == 0 and more["t"] == [9]
    ended = next_offset(_opts(), start, "t", [4], True, True, [4], False, in_flight=True)
    assert ended["a"] == 0 and ended["fin"] is True


def test_an_offset_from_before_the_ack_count_reads_as_zero() -> None:
    old = {"t": [2], "n": [2], "done": False, "fin": False, "k": 0, "capped": False}
    assert next_offset(_opts(), old, "t", [2], False, True, [2], False)["a"] == 0
