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


def test_an_unbounded_builtin_spout_gets_its_bounded_key_not_stop_iteration(
        tmp_path: Path) -> None:
    """stormshift's own JSON-lines spout follows its files unless ``jsonlines.bounded``: the
    user's code raises nothing, so the fix named is that key (issue 50 item 5)."""
    (tmp_path / "topologies").mkdir()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "words-0001.jsonl").write_text(
        "".join(f'{{"word": "w{i % 7}"}}\n' for i in range(30)))
    (tmp_path / "config.json").write_text('{"topology_specs": "topologies/"}')
    (tmp_path / "topologies" / "words.py").write_text(
        "from streamparse import Bolt, Topology\n"
        "from stormshift.spouts import JsonLinesSpout\n\n\n"
        "class Words(JsonLinesSpout):\n    outputs = ['word']\n\n\n"
        "class Count(Bolt):\n    outputs = ['word']\n\n"
        "    def process(self, tup):\n        self.emit(tup.values)\n\n\n"
        "class Counting(Topology):\n"
        f"    config = {{'jsonlines.path': '{tmp_path / 'data'}', 'jsonlines.fields': ['word']}}\n"
        "    words = Words.spec()\n    count = Count.spec(inputs=[words])\n")
    summary = LocalEngine(load_topology(tmp_path), clock=SimClock()).run()
    assert summary["words"].tuples_out == 30 and summary.total("gave_up") == 0
    (warning,) = summary.warnings
    assert "raise StopIteration" not in warning
    assert "Words follows its input for new records (jsonlines.bounded is false)" in warning
    assert "-o jsonlines.bounded=true" in warning
