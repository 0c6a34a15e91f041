"""The per-tuple kernel (``stormshift.adapters.kernel``) on real hosted bolts, no engine:
each attempt's outcome, retries, what a failed attempt leaves behind in each mode."""

from __future__ import annotations

from typing import Any

import pytest
from support.adapters_fixtures import KernelTopology

from stormshift.adapters import BoltHost, host_component
from stormshift.adapters.kernel import Kernel
from stormshift.adapters.retry_policy import Action, Outcome, RetryPolicy
from stormshift.errors import ComponentFailure, TupleError
from stormshift.topology.loader import load_topology


@pytest.fixture(scope="module")
def graph():
    return load_topology(KernelTopology)


def opened(graph, name: str) -> BoltHost:
    host = host_component(graph, name, 0)
    assert isinstance(host, BoltHost)
    host.open()
    return host


class Engine:
    """The engine's side of batch mode: sends emits, refuses to encode words "enc...",
    records what the kernel hands over."""

    def __init__(self, host: BoltHost):
        self.sent: list[str] = []
        self.rejected: list[BaseException] = []
        self.outcomes: list[tuple[str, Outcome, Any]] = []
        self.skipped: list[str] = []
        self.kernel = Kernel(host, self.dispatch, self.rejected)

    def dispatch(self, emits: list[Any]) -> None:
        for e in emits:
            if e.values[0].startswith("enc"):
                self.rejected.append(ValueError(f"cannot encode {e.values[0]}"))
            else:
                self.sent.append(e.values[0])
        emits.clear()

    def run(self, *words: Any, skip: dict[str, Any] | None = None) -> int:
        chunk = (7, "s", [w if isinstance(w, list) else [w] for w in words])
        return self.kernel.run_chunks(
            [chunk], lambda src, sid: ("words", "default"), "b:", skip or {},
            self.skipped.append, lambda tup, o, d: self.outcomes.append((tup, o, d)))


def test_run_chunks_classifies_each_attempt(graph):
    host = opened(graph, "flaky")
    engine = Engine(host)
    assert engine.run("ok", "typo", "fx", "enc1", "flaky1", ["x", "y"], "z") == 7
    got = [(tup.id, outcome) for tup, outcome, _ in engine.outcomes]
    assert got == [("b:2", Outcome.EMIT), ("b:3", Outcome.FAILED), ("b:4", Outcome.ENCODE),
                   ("b:5", Outcome.RAISED), ("b:6", Outcome.ARITY)]
    emit, failed, encode, raised, arity = (d for _, _, d in engine.outcomes)
    assert isinstance(emit, ComponentFailure) and isinstance(emit.cause, TupleError)
    assert failed is None
    assert str(encode) == "cannot encode enc1"
    assert isinstance(raised, ComponentFailure) and str(raised.cause) == "flaky1 attempt 1"
    assert isinstance(arity, TupleError) and "has 2 values" in str(arity)
    assert engine.outcomes[4][0].values == ["x", "y"]  # the values as they came
    # the raised attempt's emit was discarded; the bolt's own fail() is no ack
    assert engine.sent == ["ok", "fx", "z"] and engine.rejected == []
    assert host.outbox.acks == ["b:1", "b:4", "b:7"]
    assert [t.task for t, _, _ in engine.outcomes] == [7] * 5


def test_skipped_ids_are_not_built_and_keep_their_numbers(graph):
    host = opened(graph, "flaky")
    engine = Engine(host)
    assert engine.run("a", "b", "c", skip={"b:2": ("raised", ())}) == 3
    assert engine.skipped == ["b:2"]
    assert dict(host.instance.attempts) == {"a": 1, "c": 1}
    assert host.outbox.acks == ["b:1", "b:3"]


@pytest.mark.parametrize(("word", "attempts", "outcome", "action"), [
    ("flaky2", 3, Outcome.OK, Action.ACCEPT),  # succeeds on its last attempt
    ("flaky3", 3, Outcome.RAISED, Action.DEAD_LETTER),  # max_attempts in all, then dead
])
def test_retry_runs_until_the_policy_stops_it(graph, word, attempts, outcome, action):
    host = opened(graph, "flaky")
    engine = Engine(host)
    engine.run(word)
    ((tup, first, _),) = engine.outcomes
    assert first is Outcome.RAISED
    got, detail, decision = engine.kernel.retry(tup, RetryPolicy(3), redo=False)
    assert (got, decision.action) == (outcome, action)
    assert host.instance.attempts[word] == attempts
    # only the attempt that succeeded sent its emit
    assert engine.sent == ([word] if outcome is Outcome.OK else [])
    if outcome is Outcome.RAISED:
        assert str(detail.cause) == f"{word} attempt 3" and decision.reason == "raised"


def test_a_batching_bolt_is_not_acked_per_tuple(graph):
    host = opened(graph, "batcher")
    engine = Engine(host)
    assert engine.run("a", "b", "a") == 3
    assert engine.outcomes == [] and host.outbox.acks == []
    assert sorted(host.instance._batches) == ["a", "b"]


def test_execute_keeps_storms_semantics(graph):
    """Host mode (the local engine): a raise propagates, the emit made before it stays in the
    outbox with its anchor, and the tuple is auto-failed as pystorm does."""
    host = opened(graph, "flaky")
    ok, bad = (host.new_tuple("words", "default", 1, [w]) for w in ("ok", "flaky1"))
    host.execute(ok)
    with pytest.raises(ComponentFailure, match="flaky1 attempt 1"):
        host.execute(bad)
    assert [(e.values, e.anchors) for e in host.outbox.emits] == [
        (["ok"], (ok.id,)), (["flaky1"], (bad.id,))]
    assert host.outbox.acks == [ok.id] and host.outbox.fails == [bad.id]
