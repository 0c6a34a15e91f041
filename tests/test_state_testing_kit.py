"""stormshift.testing.run_bolt: one bolt in-process over fakeredis (the users' test kit)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from streamparse import Bolt

import stormshift.state
from stormshift.testing import run_bolt


class WordCount(Bolt):
    """A legacy bolt: state in a Counter attribute."""

    outputs = ["word", "count"]

    def initialize(self, conf: dict[str, Any], ctx: dict[str, Any]) -> None:
        self.counts: Counter[str] = Counter()

    def process(self, tup: Any) -> None:
        word = tup.values.word
        if word == "boom":
            raise ValueError("cannot count boom")
        self.counts[word] += 1
        self.emit([word, self.counts[word]])


class AdClicks(Bolt):
    """A bolt using state maps from process(), without knowing the batch."""

    outputs = ["ad_id", "total"]

    def initialize(self, conf: dict[str, Any], ctx: dict[str, Any]) -> None:
        self.clicks = stormshift.state.opaque_map("clicks")
        self.last_seen = stormshift.state.transactional_map("last_seen")

    def process(self, tup: Any) -> None:
        self.clicks.increment(tup.values.ad_id, tup.values.n)
        self.last_seen.put(tup.values.ad_id, tup.values.ts)
        self.emit([tup.values.ad_id, self.clicks.get(tup.values.ad_id)])


def test_legacy_bolt_emits_acks_fails_and_attributes():
    run = run_bolt(WordCount, [["cow"], ["moon"], ["boom"], ["cow"]], fields=["word"])
    assert run.values() == [["cow", 1], ["moon", 1], ["cow", 2]]
    assert run.acks == [run.tuple_ids[i] for i in (0, 1, 3)]
    assert run.fails == [run.tuple_ids[2]]
    assert "cannot count boom" in str(run.failures[0])
    assert run.instance.counts == Counter({"cow": 2, "moon": 1})
    assert run.state == {}
    assert all(e.anchors == (tid,) for e, tid in zip(run.emits, [run.tuple_ids[i] for i in (0, 1, 3)]))


def test_state_map_bolt_in_batches_with_replays_stays_exact():
    clicks = [{"ad_id": f"ad-{i % 3}", "n": 1 + i % 2, "ts": i} for i in range(10)]
    plain = run_bolt(AdClicks, clicks, batch_size=4)
    replayed = run_bolt(AdClicks, clicks, batch_size=4, replay=True)
    want = {"ad-0": 1 + 2 + 1 + 2, "ad-1": 2 + 1 + 2, "ad-2": 1 + 2 + 1}
    for run in (plain, replayed):
        assert run.state["clicks"] == want
        assert run.state["last_seen"] == {"ad-0": 9, "ad-1": 7, "ad-2": 8}
        assert run.values()[-1] == ["ad-0", want["ad-0"]]
        assert len(run.acks) == 10
    assert plain.values() == replayed.values()


def test_state_carries_over_between_runs_on_the_same_redis():
    first = run_bolt(AdClicks, [{"ad_id": "a", "n": 2, "ts": 1}])
    second = run_bolt(AdClicks, [{"ad_id": "a", "n": 3, "ts": 2}], redis=first.redis)
    assert second.state["clicks"] == {"a": 5}
    assert second.values() == [["a", 5]]
