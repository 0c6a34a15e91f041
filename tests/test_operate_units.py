"""The pure parts of operating a port: ``--par`` on the graph, the upgrade rules."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from stormshift.errors import TopologyError
from stormshift.state.component import names_in_code
from stormshift.state.tracked import track
from stormshift.state.upgrade import TaskChanges, compare, merge
from stormshift.topology.loader import load_topology
from stormshift.topology.rebalance import parse_pars, with_par

LEDGER = Path(__file__).resolve().parent / "fixtures" / "operate" / "ledger"


def test_with_par_renumbers_tasks_as_storm_does() -> None:
    graph = load_topology(LEDGER)
    wider = with_par(graph, parse_pars(["balance=3", "balance=4"]))  # later wins
    assert wider.component("balance").task_ids == (1, 2, 3, 4)
    assert wider.component("readings").task_ids == (5,)
    assert graph.component("balance").par == 2  # the loaded graph is untouched
    assert with_par(graph, {"balance": 2}) is graph


@pytest.mark.parametrize("text", ["balance", "balance=0", "balance=x", "=3"])
def test_a_malformed_par_is_a_clear_error(text: str) -> None:
    with pytest.raises(TopologyError, match=r"COMPONENT=N.*\n  fix: write e\.g\. --par"):
        parse_pars([text])


def test_an_unknown_component_names_the_real_ones() -> None:
    with pytest.raises(TopologyError, match=r"'ballance'.*\n  fix: .*balance, readings"):
        with_par(load_topology(LEDGER), {"ballance": 3})


def test_kept_added_removed_refused() -> None:
    changes = TaskChanges("balance")
    stored = {"balances": track(Counter(a=1)), "seen": 3, "old": [1], "total": 5,
              "lazy": {"x": 1}, "ratio": 1, "rate": None, "spent": 2.5}
    fresh = {"balances": Counter(), "seen": "three", "total": 0.0, "ratio": 0.5,
             "rate": 0.1, "readings": Counter(), "spent": 0}
    keep = compare(changes, stored, fresh, in_code={"lazy", "balances"})
    merge(changes)
    assert changes.kept == {"balances", "total", "lazy", "ratio", "rate", "spent"}
    assert changes.added == {"readings"} and changes.removed == {"old"}
    assert list(changes.refused) == ["seen"]
    assert (changes.refused["seen"].stored, changes.refused["seen"].fresh) == ("int", "str")
    assert "old" not in keep and keep["balances"] == Counter(a=1)


def test_names_in_code_sees_attributes_made_outside_initialize() -> None:
    class Lazy:
        def initialize(self) -> None:
            self.a = 1

        def process(self) -> None:
            self.b = getattr(self, "c", 0) + len(self.__dict__)

    assert {"a", "b", "c"} <= names_in_code(Lazy)


def test_without_the_source_nothing_is_dropped() -> None:
    Made = type("Made", (), {})
    assert names_in_code(Made) is None
    changes = TaskChanges("made")
    assert compare(changes, {"old": 1}, {}, None) == {"old": 1} and changes.kept == {"old"}
