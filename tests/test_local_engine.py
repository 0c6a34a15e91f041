"""The local engine behaves like Storm: totals, acks, timeouts, pending, ticks, crashes."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

from streamparse import Grouping, Topology
from support import local_fixtures
from support.local_fixtures import (
    CrashOnceSpout,
    HoldingBolt,
    LengthRouterBolt,
    SentenceSpout,
    SplitBolt,
    TickCounterBolt,
    TotalBolt,
    UnreliableSpout,
    WordBatchBolt,
    WordTicklessBolt,
    sentence_at,
    word_totals,
    wordcount,
)

from stormshift.adapters.routing import stable_hash
from stormshift.engines.local import CrashTask, FailTuples, LocalEngine, SimClock
from stormshift.engines.summary import RunSummary
from stormshift.topology.loader import load_topology

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run(
    graph: Any, seed: int = 0, ms_per_round: int = 1, **kw: Any
) -> tuple[LocalEngine, RunSummary]:
    bounds = {k: kw.pop(k) for k in ("max_tuples", "duration_secs") if k in kw}
    engine = LocalEngine(graph, clock=SimClock(ms_per_round=ms_per_round), seed=seed, **kw)
    return engine, engine.run(**bounds)


def final_counts(summary: RunSummary) -> Counter[str]:
    return Counter({w: v[1] for w, v in summary.latest("count").items()})


# -- totals ------------------------------------------------------------------
def test_wordcount_totals_exact_and_every_tree_acked() -> None:
    engine, summary = run(wordcount(limit=40))
    assert summary.stop_reason == "sources exhausted"
    assert final_counts(summary) == word_totals(40)
    spout = engine.instances("sentences")[0]
    assert spout.acked == list(range(40)) and spout.failed == []
    words = sum(word_totals(40).values())
    assert (summary["split"].tuples_in, summary["count"].tuples_in) == (40, words)
    assert (summary["sentences"].acks, summary["count"].acks, summary.total("duplicates")) == (
        40,
        words,
        0,
    )
    assert summary.pending_trees == 0
    # each word lives on the one count task its fields grouping picks
    by_task = [set(i.counts) for i in engine.instances("count")]
    assert by_task[0].isdisjoint(by_task[1]) and by_task[0] | by_task[1] == set(word_totals(40))
    assert summary.table().row_count == 3


def test_multi_stream_topology_with_all_grouping() -> None:
    class Streams(Topology):
        sentences = SentenceSpout.spec(config={"fixture.limit": 25})
        split = SplitBolt.spec(inputs=[sentences], par=2)
        router = LengthRouterBolt.spec(inputs={split: Grouping.fields("word")}, par=3)
        short_total = TotalBolt.spec(inputs={router["short"]: Grouping.SHUFFLE}, par=2)
        long_total = TotalBolt.spec(inputs={router["long"]: Grouping.ALL}, par=2)

    engine, summary = run(load_topology(Streams))
    words = [w for i in range(25) for w in sentence_at(i).split()]
    short = sum(len(w) <= 3 for w in words)
    long_ = len(words) - short
    assert summary["router"].tuples_out == len(words)
    assert summary["short_total"].tuples_in == short
    assert summary["long_total"].tuples_in == 2 * long_  # all grouping: every task gets each
    assert [sum(i.totals.values()) for i in engine.instances("long_total")] == [long_, long_]
    assert sum(sum(i.totals.values()) for i in engine.instances("short_total")) == short
    assert engine.instances("sentences")[0].acked == list(range(25))


# -- acks, fails, timeouts ----------------------------------------------------
def test_failed_tuple_replays_and_double_counts_visibly() -> None:
    engine, summary = run(wordcount(limit=10), faults=[FailTuples("count", indexes={3})])
    spout = engine.instances("sentences")[0]
    replayed = spout.failed
    assert replayed == [0]  # the 3rd word counted belongs to sentence 0
    assert sorted(spout.acked) == list(range(10))
    assert summary["sentences"].replays == 1 and summary["count"].fails == 1
    again = Counter(sentence_at(0).split())
    assert final_counts(summary) == word_totals(10) + again  # counted twice
    assert summary["count"].duplicates == sum(again.values())
    assert engine.injected == ["fail count tuple 3 (fail_after)"]


def test_fail_by_predicate_fires_once_and_replays() -> None:
    moon = FailTuples("count", predicate=lambda tup: tup.values.word == "moon", times=1)
    engine, summary = run(wordcount(limit=10), faults=[moon])
    assert engine.instances("sentences")[0].failed == [0]  # "moon" is in sentence 0
    assert final_counts(summary) == word_totals(10) + Counter(sentence_at(0).split())


def test_drain_is_bounded_when_trees_never_finish() -> None:
    class Hold(Topology):
        sentences = SentenceSpout.spec(config={"fixture.limit": 1, "fixture.max_fails": 100})
        hold = HoldingBolt.spec(inputs=[sentences])

    graph = load_topology(Hold, overrides={"topology.message.timeout.secs": 1})
    engine, summary = run(graph, drain_secs=4.5)
    assert summary.stop_reason.startswith("sources exhausted; drain stopped after 4.5s")
    assert summary.pending_trees == 1 and engine.instances("sentences")[0].failed == [0] * 4


def test_fail_before_processing_replays_without_double_count_at_that_bolt() -> None:
    engine, summary = run(
        wordcount(limit=5, par=1), faults=[FailTuples("split", indexes={2}, before=True)]
    )
    assert engine.instances("sentences")[0].failed == [1]
    assert final_counts(summary) == word_totals(5)
    assert summary["split"].duplicates == 0 and summary["count"].duplicates == 0


def test_unacked_trees_time_out_after_message_timeout_and_replay_up_to_max_fails() -> None:
    class Hold(Topology):
        sentences = SentenceSpout.spec(config={"fixture.limit": 2, "fixture.max_fails": 2})
        hold = HoldingBolt.spec(inputs=[sentences])

    engine, summary = run(load_topology(Hold, overrides={"topology.message.timeout.secs": 5}))
    spout = engine.instances("sentences")[0]
    assert spout.failed == [0, 1, 0, 1, 0, 1]  # 1 try + 2 replays each, oldest first
    assert summary["sentences"].timeouts == 6 and summary["sentences"].replays == 4
    assert engine.instances("hold")[0].held == 6
    # 3 rounds of 5 s timeouts: the run took (just over) 15 s of engine time
    assert 15_000 <= summary.engine_time_ms < 15_100


def test_unreliable_spout_tuples_are_never_acked_or_failed() -> None:
    engine, summary = run(wordcount(limit=8, spout=UnreliableSpout))
    assert final_counts(summary) == word_totals(8)
    assert engine.instances("sentences")[0].acked == []
    assert summary["sentences"].acks == summary["sentences"].fails == 0


def test_acking_disabled_acks_spout_tuples_at_emit() -> None:
    engine, _ = run(wordcount(limit=4, config={"topology.acker.executors": 0}))
    assert engine.instances("sentences")[0].acked == [0, 1, 2, 3]


def test_max_spout_pending_is_respected_per_spout_task() -> None:
    class Pending(Topology):
        sentences = SentenceSpout.spec(
            config={"fixture.limit": 12, "topology.max.spout.pending": 3}
        )
        split = SplitBolt.spec(inputs=[sentences])
        batch = WordBatchBolt.spec(
            inputs={split: Grouping.fields("word")}, config={"topology.tick.tuple.freq.secs": 1}
        )

    engine, summary = run(load_topology(Pending))
    spout = engine.instances("sentences")[0]
    assert spout.most_pending == 2  # asked only while pending < 3
    assert spout.acked == list(range(12))
    batches = Counter()
    for word, n in summary.output("batch"):
        batches[word] += n
    assert batches == word_totals(12)


# -- ticks and batching ---------------------------------------------------------
def test_tick_tuples_every_interval_of_engine_time() -> None:
    class Ticks(Topology):
        sentences = SentenceSpout.spec()
        split = SplitBolt.spec(inputs=[sentences])
        ticker = TickCounterBolt.spec(
            inputs=[split], par=2, config={"topology.tick.tuple.freq.secs": 2}
        )

    engine, summary = run(load_topology(Ticks), duration_secs=10, ms_per_round=10)
    assert [i.ticks for i in engine.instances("ticker")] == [5, 5]  # at 2, 4, 6, 8, 10 s
    assert summary["ticker"].tuples_in == sum(i.seen for i in engine.instances("ticker"))


def test_tickless_batching_bolt_flushes_every_secs_between_batches() -> None:
    class Tickless(Topology):
        sentences = SentenceSpout.spec(config={"fixture.limit": 30})
        split = SplitBolt.spec(inputs=[sentences])
        batch = WordTicklessBolt.spec(inputs={split: Grouping.fields("word")}, par=2)

    engine, summary = run(load_topology(Tickless), ms_per_round=100)
    flushed = Counter()
    for word, n in summary.output("batch"):
        flushed[word] += n
    assert flushed == word_totals(30)
    assert sorted(engine.instances("sentences")[0].acked) == list(range(30))  # in completion order
    assert summary.engine_time_ms % 2000 < 100  # the run ended right after a flush
    # sentence i is emitted at 100*i ms and completes at the next flush (every 2 s)
    waits = [(100 * i // 2000 + 1) * 2000 - 100 * i for i in range(30)]
    assert summary["sentences"].complete_latency_ms == sum(waits) / 30


def test_final_tick_only_when_asked() -> None:
    class Final(Topology):
        sentences = UnreliableSpout.spec(config={"fixture.limit": 3})
        ticker = TickCounterBolt.spec(
            inputs=[sentences], config={"topology.tick.tuple.freq.secs": 60}
        )

    plain, _ = run(load_topology(Final))
    ticked, _ = run(load_topology(Final), final_tick=True)
    assert plain.instances("ticker")[0].ticks == 0
    assert ticked.instances("ticker")[0].ticks == 1


# -- bounded runs ---------------------------------------------------------------
def test_max_tuples_stops_pulling_and_drains() -> None:
    engine, summary = run(wordcount(), max_tuples=7)
    assert summary.spout_tuples == 7 and engine.instances("sentences")[0].index == 7
    assert summary.stop_reason == "max_tuples=7 reached" and summary.pending_trees == 0
    assert final_counts(summary) == word_totals(7)
    assert engine.instances("sentences")[0].activations == ["activate", "deactivate"]


def test_duration_counts_engine_time() -> None:
    _, summary = run(wordcount(), duration_secs=2, ms_per_round=4)
    assert summary.spout_tuples == 2000 // 4  # one next_tuple per 4 ms round
    assert summary.stop_reason == "duration 2s reached"
    assert final_counts(summary) == word_totals(500)


# -- crashes -------------------------------------------------------------------
def _task_of(word: str, par: int = 2) -> int:
    return stable_hash([word]) % par


def test_crash_loses_state_and_replay_double_counts() -> None:
    graph = wordcount(limit=12, config={"topology.message.timeout.secs": 5})
    engine, summary = run(graph, faults=[CrashTask("count", task_index=0, at_tuple=15)])
    spout = engine.instances("sentences")[0]
    # the sentence holding task 0's 15th word was lost with the task: it timed out and replayed
    seen, crashed_in = 0, None
    for i in range(12):
        seen += sum(_task_of(w) == 0 for w in sentence_at(i).split())
        if seen >= 15:
            crashed_in = i
            break
    assert crashed_in is not None and crashed_in > 0
    assert spout.failed == [crashed_in] and sorted(spout.acked) == list(range(12))
    assert summary["count"].restarts == 1 and summary["sentences"].timeouts == 1
    replay = Counter(sentence_at(crashed_in).split())
    totals = word_totals(12)
    final = final_counts(summary)
    survivor = {w for w in totals if _task_of(w) == 1}
    # task 1 kept its state and counted the replayed sentence twice
    assert {w: final[w] for w in survivor} == {w: totals[w] + replay[w] for w in survivor}
    # task 0 restarted empty: it only knows what came after the crash (replay included)
    after = word_totals(12) - word_totals(crashed_in + 1) + replay
    fresh = engine.instances("count")[0].counts
    assert fresh == Counter({w: n for w, n in after.items() if _task_of(w) == 0})
    assert any(final[w] < totals[w] for w in totals if _task_of(w) == 0)
    assert summary["count"].duplicates > 0


def test_bolt_exception_kills_task_fails_tuple_and_replays() -> None:
    graph = wordcount(limit=3, count_conf={"fixture.explode_on": "apple"})
    engine, summary = run(graph)
    spout = engine.instances("sentences")[0]
    tries = 1 + 3  # ReliableSpout.max_fails = 3, then it gives up (acks)
    assert Counter(spout.failed)[1] == tries  # "apple" is only in sentence 1
    assert summary["count"].restarts == tries and summary["count"].errors == tries
    # words queued behind "apple" died with the process: their trees timed out
    assert summary["sentences"].timeouts == len(spout.failed) - tries
    assert "apple" in summary.error_messages[0]
    assert "apple" not in engine.instances("count")[_task_of("apple")].counts


def test_spout_crash_restarts_it_with_a_fresh_instance() -> None:
    local_fixtures.CRASHED_ONCE.clear()
    graph = wordcount(limit=6, spout=CrashOnceSpout, spout_conf={"fixture.crash_at": 4})
    engine, summary = run(graph)
    assert summary["sentences"].restarts == 1 and summary["sentences"].errors == 1
    assert "lost its connection at sentence 4" in summary.error_messages[0]
    # the fresh instance starts over (its source has no offsets): sentences 0..5 again
    assert engine.instances("sentences")[0].acked == list(range(6))
    assert final_counts(summary) == word_totals(4) + word_totals(6)


def test_progress_lines_and_bounded_wall_clock_run() -> None:
    lines: list[str] = []
    engine = LocalEngine(wordcount(), progress_interval_secs=0.001)
    summary = engine.run(duration_secs=0.05, on_progress=lines.append)
    assert summary.stop_reason == "duration 0.05s reached"
    assert lines and lines[-1] == summary.progress_line()
    assert f"{summary.spout_tuples} spout tuples" in lines[-1]
    assert final_counts(summary) == word_totals(summary.spout_tuples)
    assert engine.snapshots("count")[0]["counts"] == engine.instances("count")[0].counts


def test_same_seed_same_run() -> None:
    def once() -> dict[str, Any]:
        graph = wordcount(limit=15, config={"topology.message.timeout.secs": 3})
        faults = [CrashTask("count", task_index=1, at_tuple=4), FailTuples("split", indexes={6})]
        _, summary = run(graph, seed=42, faults=faults)
        out = summary.to_dict()
        out.pop("elapsed_ms")
        for comp in out["components"].values():
            comp.pop("busy_ms")
        return {"summary": out, "outputs": summary.outputs}

    assert once() == once()


# -- the examples -----------------------------------------------------------------
def test_wordcount_example_totals() -> None:
    graph = load_topology(EXAMPLES / "wordcount", name="wordcount")
    _, summary = run(graph, max_tuples=1000)
    words = ["dog", "cat", "zebra", "elephant"]
    emitted = Counter(words[i % 4] for i in range(1000))
    expected = {w: n * (10 if w == "dog" else 1) for w, n in emitted.items()}
    assert {w: v[1] for w, v in summary.latest("count_bolt").items()} == expected


def test_adclicks_example_matches_independent_totals() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "adclicks_expected", EXAMPLES / "adclicks" / "expected.py"
    )
    assert spec is not None and spec.loader is not None
    expected_mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = expected_mod  # dataclasses look their module up
    spec.loader.exec_module(expected_mod)
    overrides = {"adclicks.seed": 11, "adclicks.events": 3000}
    graph = load_topology(EXAMPLES / "adclicks", name="adclicks", overrides=overrides)
    _, summary = run(graph)
    assert summary.stop_reason == "sources exhausted"
    want = expected_mod.compute(expected_mod.generated_lines(seed=11, events=3000))
    ctr = {ad: tuple(v[1:]) for ad, v in summary.latest("ads_ctr_bolt").items()}
    assert ctr == {ad: tuple(t) for ad, t in want.ctr_by_ad.items()}
    spend = {adv: v[1] for adv, v in summary.latest("client_spent_bolt").items()}
    assert spend == want.spend_by_advertiser
    assert want.duplicates > 0  # client retries are double billed on legacy Storm
