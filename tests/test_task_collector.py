"""The collector policy of a task host (``task/collector.py``): no young collection of a
task's transient objects while it runs, its cycles freed when it ends, the state it keeps
kept, the thresholds restored, and a collector the user turned off left off."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from stormshift.engines.spark.task.collector import TASK_YOUNG_THRESHOLD, task_collections


class Node:
    """A cyclic object, as a task's per-batch helpers are (a closure over its owner)."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture(autouse=True)
def _restore_collector() -> Iterator[None]:
    enabled, thresholds = gc.isenabled(), gc.get_threshold()
    gc.enable()
    gc.collect()
    yield
    gc.set_threshold(*thresholds)
    (gc.enable if enabled else gc.disable)()


def test_a_task_runs_with_rare_young_collections_and_the_thresholds_come_back() -> None:
    before = gc.get_threshold()
    with task_collections():
        assert gc.get_threshold() == (max(before[0], TASK_YOUNG_THRESHOLD), *before[1:])
    assert gc.get_threshold() == before


def test_the_tasks_cycles_are_freed_at_its_end_and_what_it_kept_stays() -> None:
    state: list[Node] = []  # the live instance's state, older than the task
    collections = [0]

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections[0] += 1

    with task_collections():
        kept = Node()
        state.append(kept)
        garbage = weakref.ref(Node())  # unreachable at once: only a collection frees a cycle
        gc.callbacks.append(count)
        try:
            transient = [[i] for i in range(100_000)]  # a batch's objects, held for the task
            del transient
        finally:
            gc.callbacks.remove(count)
        assert garbage() is not None
    assert collections[0] == 0  # no collection walked the task's transient objects
    assert garbage() is None  # the young collection at the task's end freed the cycle
    assert state == [kept] and kept.me is kept


def test_without_the_policy_the_same_task_is_walked_by_young_collections() -> None:
    """The control: CPython's default thresholds collect during such a task."""
    collections = [0]

    def count(phase: str, info: dict[str, int]) -> None:
        collections[0] += phase == "start"

    gc.set_threshold(700, 10, 10)
    gc.callbacks.append(count)
    try:
        transient = [[i] for i in range(100_000)]
        del transient
    finally:
        gc.callbacks.remove(count)
    assert collections[0] > 100


def test_an_error_in_the_task_still_restores_and_collects() -> None:
    before = gc.get_threshold()
    ref = None
    with pytest.raises(RuntimeError), task_collections():
        ref = weakref.ref(Node())
        raise RuntimeError("a failing task")
    assert gc.get_threshold() == before
    assert ref is not None and ref() is None


def test_a_collector_turned_off_is_left_off_and_untouched() -> None:
    gc.disable()
    before = gc.get_threshold()
    with task_collections():
        assert gc.get_threshold() == before
        ref = weakref.ref(Node())
    assert not gc.isenabled()
    assert ref() is not None  # nothing collected: the user's choice
