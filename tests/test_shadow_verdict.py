"""The verdict line and its exit code, from comparisons built by hand (pure, no engine).

The corpus (``tests/test_corpus.py``) shows each verdict on real projects on both
engines; here the rules' edges: which verdict wins, what is blamed on the port.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from stormshift.engines.summary import ComponentStats, RunSummary
from stormshift.shadow.classify import (
    CRASH_LOST_STATE,
    NONDETERMINISTIC,
    PORT_DIFFERENCE,
    REPLAY_DOUBLE_COUNT,
    ROUNDING,
)
from stormshift.shadow.compare import Divergence, DivergenceKind, Tolerance
from stormshift.shadow.verdict import classes, judge


def summary(fails: int = 0, dead: int = 0, tuples_in: int = 10) -> RunSummary:
    bolt = ComponentStats("count", "bolt", 1, tuples_in=tuples_in, fails=fails, dead_lettered=dead)
    return RunSummary("t", "local", {"count": bolt})


def comparison(*causes: str, same: int = 3) -> Any:
    ds = [Divergence("count:default", DivergenceKind.VALUE_DIFFERS, f"k{i}", [1], [2], 1, 1,
                     cause=c, within_tolerance=c == ROUNDING) for i, c in enumerate(causes)]
    return SimpleNamespace(divergences=ds, keys=same + len(ds))


def result(*items: Any, legacy: RunSummary | None = None, port: RunSummary | None = None) -> Any:
    return SimpleNamespace(streams=list(items), states=[], legacy=legacy or summary(),
                           port=port or summary(), tolerance=Tolerance())


def test_storm_and_rounding_differences_are_safe_and_named() -> None:
    r = result(comparison(REPLAY_DOUBLE_COUNT, REPLAY_DOUBLE_COUNT, CRASH_LOST_STATE, ROUNDING))
    v = judge(r)
    assert (v.word, v.exit_code) == ("SAFE TO SWITCH", 0)
    assert v.line == ("SAFE TO SWITCH: 0 port differences in 7 compared keys; 2 keys differ by "
                      "Storm replay double count, e.g. k0 in count:default; 1 key differs by "
                      "legacy crash loss, e.g. k2 in count:default; 1 key differs by rounding "
                      "(within rel 1e-09), e.g. k3 in count:default")
    assert [(c.id, c.keys) for c in classes(r)] == [
        ("storm-replay", 2), ("storm-crash-loss", 1), ("rounding", 1)]


def test_one_port_difference_is_port_differs_and_the_rest_is_still_counted() -> None:
    v = judge(result(comparison(NONDETERMINISTIC, PORT_DIFFERENCE)))
    assert (v.word, v.exit_code) == ("PORT DIFFERS", 1)
    assert v.reason.startswith("1 of 5 compared keys differ in the port (e.g. k1 in count:default)")
    assert "a nondeterministic component" in v.reason


def test_nothing_compared_is_never_agreement() -> None:
    v = judge(result(comparison(same=0)))
    assert (v.word, v.exit_code) == ("NOTHING COMPARED", 3)
    assert judge(result()).exit_code == 3  # no leaf stream, no state at all


def test_mostly_failed_needs_both_sides_and_wins() -> None:
    failing, fine = summary(fails=8), summary(dead=1)
    assert judge(result(comparison(PORT_DIFFERENCE), legacy=failing, port=summary(dead=6))
                 ).word == "MOSTLY FAILED"
    assert judge(result(comparison(same=0), legacy=failing, port=summary(dead=10))).exit_code == 4
    assert judge(result(comparison(), legacy=failing, port=fine)).word == "SAFE TO SWITCH"
    # half is not most
    assert judge(result(comparison(), legacy=summary(fails=5), port=summary(dead=5))
                 ).word == "SAFE TO SWITCH"


def test_a_live_result_has_no_runs_and_still_gets_a_verdict() -> None:
    live = result(comparison(same=2))
    live.legacy = live.port = None
    assert judge(live).line == "SAFE TO SWITCH: 0 port differences; all 2 compared keys are equal"
