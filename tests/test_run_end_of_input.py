"""The local engine's end-of-input warning names the real cause (issue 31 item 10).

``tests/fixtures/runs/jsonl_replays``: the built-in bounded JSON-lines spout
feeding a validator that fails 4 of 40 orders every time. With
``stormshift.max_replays=2`` the engine gives those 4 up; the spout still
waits for their ack or fail, so it never raises ``StopIteration``: the warning
must say so, not blame the spout for swallowing its end of input.
"""

from __future__ import annotations

from pathlib import Path

from stormshift.engines.local import LocalEngine, SimClock
from stormshift.topology.loader import load_topology

RUNS = Path(__file__).resolve().parent / "fixtures" / "runs"
FAILING = Path(__file__).resolve().parent / "fixtures" / "failing"


def test_a_bounded_builtin_spout_waiting_for_given_up_tuples_is_named_as_such() -> None:
    graph = load_topology(RUNS / "jsonl_replays")
    summary = LocalEngine(graph, clock=SimClock()).run()
    assert summary["orders"].gave_up == 4 and summary["validate"].fails == 12
    (warning,) = summary.warnings
    assert warning.startswith("spout orders is still waiting for 4 tuple(s) the engine gave up "
                              "replaying (each failed more than stormshift.max_replays=2 times")
    assert "never signalled" not in warning and "-o stormshift.max_replays=N" in warning
    assert summary.stop_reason == "sources idle for 10s"


def test_a_spout_that_swallows_stop_iteration_still_gets_the_fix_for_that() -> None:
    graph = load_topology(FAILING, name="swallow_stop")
    summary = LocalEngine(graph, clock=SimClock()).run()
    assert summary.total("gave_up") == 0
    assert any("never signalled end of input" in w and "raise StopIteration" in w
               for w in summary.warnings)
