"""A batch's stages by wave: independent groups in one Spark job, provably idle stages run
no task, and the results do not change (``driver/waves.py``)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from stormshift.engines.spark.driver.waves import (
    IdleWindows,
    first_job,
    idle_tasks,
    stage_groups,
    stage_runs,
    waves,
)
from stormshift.engines.spark.protocol.layout import Layout
from stormshift.topology.loader import load_topology
from stormshift.windows import Sliding, Windowing
from stormshift.windows.state import WindowingState

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
sys.path.insert(0, str(Path(__file__).parent / "spark_fixtures"))
import sparktopo


def _adclicks(**overrides: object) -> Layout:
    return Layout(load_topology(str(EXAMPLES / "adclicks"), name="adclicks", overrides=overrides))


def _runs(layout: Layout, head: str, fed: frozenset[int] = frozenset(), **kw: object) -> bool:
    args: dict = {"ticks": frozenset(), "redriven": False, "final": False, "txid": 5,
                  "windows": IdleWindows(())} | kw
    return stage_runs(layout, layout.stage_of[head], fed=fed, **args)


def test_waves_are_the_levels_of_the_graph():
    layout = _adclicks()
    groups, reads = stage_groups(layout)
    assert [[[s.head for s in groups[i]] for i in wave] for wave in waves(groups, reads)] == [
        [["parse_bolt"]],
        [["ads_ctr_bolt", "client_spent_bolt", "ad_ctr_minute_bolt", "advertiser_day_bolt",
          "user_sessions_bolt"]],
        [["user_sessions_report_bolt"]]]
    # two independent groups (doubler runs on the source's partitions) in one wave, one
    # Spark job; a bolt reading the spout and a bolt: the level after that bolt's
    stateful = Layout(load_topology(sparktopo.Stateful))
    groups, reads = stage_groups(stateful)
    assert [[groups[i][0].head for i in wave] for wave in waves(groups, reads)] == [
        ["sums", "doubler"], ["join"]]


def test_a_stage_runs_only_when_it_may_have_work():
    layout = _adclicks()
    first = layout.first_task("ads_ctr_bolt")
    assert _runs(layout, "parse_bolt")  # a spout feeds it: never known empty
    assert not _runs(layout, "ads_ctr_bolt")  # no row sent to its tasks this batch
    assert _runs(layout, "ads_ctr_bolt", fed=frozenset({first + 1}))
    assert not _runs(layout, "ads_ctr_bolt", fed=frozenset({layout.first_task("client_spent_bolt")}))
    assert _runs(layout, "ads_ctr_bolt", ticks=frozenset({"ads_ctr_bolt"}))
    assert _runs(layout, "ads_ctr_bolt", redriven=True)
    assert _runs(layout, "ads_ctr_bolt", final=True)  # end_of_input on every bolt defining it
    # a fused member's tick runs its stage (head without input)
    assert _runs(layout, "advertiser_day_bolt", windows=IdleWindows(()),
                 ticks=frozenset({"budget_alert_bolt"}))


def test_a_windowed_stage_is_idle_only_when_every_task_said_so_in_an_earlier_batch():
    layout = _adclicks()
    windows = IdleWindows(["advertiser_day_bolt"])
    assert _runs(layout, "advertiser_day_bolt", windows=windows)  # unknown: runs
    windows.note("advertiser_day_bolt", 0, 4, {"idle": True})
    assert _runs(layout, "advertiser_day_bolt", windows=windows)  # task 1 unknown
    windows.note("advertiser_day_bolt", 1, 4, {"idle": False})
    assert _runs(layout, "advertiser_day_bolt", windows=windows)  # task 1 holds windows
    windows.note("advertiser_day_bolt", 1, 4, {"idle": True})
    assert not _runs(layout, "advertiser_day_bolt", windows=windows, txid=5)
    assert not _runs(layout, "advertiser_day_bolt", windows=windows, txid=9)  # skipped since
    # a re-run of txid 4 (its commit failed after the reports were read) runs it again
    assert _runs(layout, "advertiser_day_bolt", windows=windows, txid=4)


def test_the_one_job_holds_the_expected_groups_whose_inputs_it_holds():
    layout = _adclicks()
    groups, reads = stage_groups(layout)
    heads = [g[0].head for g in groups]
    every = range(len(groups))
    assert [heads[i] for i in first_job(groups, reads, every)] == heads
    # the sessions report was fed nothing last batch: it waits for the records
    report = heads.index("user_sessions_report_bolt")
    assert [heads[i] for i in first_job(groups, reads, [i for i in every if i != report])] == \
        ["parse_bolt", "ads_ctr_bolt"]
    # a group whose input is not in the job cannot be in it, expected or not
    assert [heads[i] for i in first_job(groups, reads, [0, report])] == ["parse_bolt"]


def test_a_task_may_skip_without_rows_only_when_nothing_else_makes_it_run():
    layout = _adclicks()
    args: dict = {"ticks": frozenset(), "redriven": False, "final": False, "txid": 5}
    windows = IdleWindows(["advertiser_day_bolt"])
    stage = layout.stage_of["ads_ctr_bolt"]
    assert idle_tasks(layout, stage, windows=windows, **args) == frozenset({0, 1})
    assert idle_tasks(layout, stage, windows=windows, **args | {"final": True}) == frozenset()
    assert idle_tasks(layout, stage, windows=windows, **args | {"redriven": True}) == frozenset()
    assert idle_tasks(layout, stage, windows=windows,
                      **args | {"ticks": frozenset({"ads_ctr_bolt"})}) == frozenset()
    assert idle_tasks(layout, layout.stage_of["parse_bolt"], windows=windows, **args) == frozenset()
    day = layout.stage_of["advertiser_day_bolt"]
    assert idle_tasks(layout, day, windows=windows, **args) == frozenset()  # unknown: runs
    windows.note("advertiser_day_bolt", 1, 4, {"idle": True})
    windows.note("advertiser_day_bolt", 0, 4, {"idle": False})
    assert idle_tasks(layout, day, windows=windows, **args) == frozenset({1})
    assert idle_tasks(layout, day, windows=windows, **args | {"txid": 4}) == frozenset()  # re-run


def test_windowing_state_is_idle_without_windows_timers_or_held_tuples():
    sliding = Windowing(assigner=Sliding(60_000, 30_000), lag_ms=0)
    state = WindowingState.build(sliding, [])
    assert state.idle()
    state.windower.add("k", 1_000, 1, 0)
    assert not state.idle()
    state.windower.advance(10**12, 0)  # fires and expires every window
    assert state.idle()
    state.windower.set_timer("k", 5_000)
    assert not state.idle()


def _expected_module():
    spec = importlib.util.spec_from_file_location("adclicks_expected",
                                                  EXAMPLES / "adclicks" / "expected.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_windows_off_runs_no_windowed_task_and_keeps_the_legacy_totals(spark, redis_url, namespace,
                                                                       tmp_path):
    """``-o adclicks.windows=false``: parse_bolt emits nothing on ``events``; after the first
    batch (where the windowed bolts report they hold nothing) their stages, with their fused
    formatting bolts, run no task, nor does the sessions report; the legacy totals equal
    the oracle."""
    from stormshift.engines.spark import SparkEngine

    events = 3000
    graph = load_topology(str(EXAMPLES / "adclicks"),
                          overrides={"adclicks.events": events, "adclicks.windows": False})
    engine = SparkEngine(graph, checkpoint_dir=str(tmp_path / "ck"), redis_url=redis_url,
                         spark=spark, namespace=namespace, until_done=True, batch_max_tuples=500)
    batches: list[str] = []
    summary = engine.run(on_progress=batches.append)
    oracle = _expected_module()
    expected = oracle.compute(oracle.generated_lines(7, events))
    assert {ad: tuple(v[1:4]) for ad, v in summary.latest("ads_ctr_bolt").items()} == \
        {ad: tuple(t) for ad, t in expected.ctr_by_ad.items()}
    assert {a: v[1] for a, v in summary.latest("client_spent_bolt").items()} == \
        expected.spend_by_advertiser
    for name in ("parse_bolt", "ads_ctr_bolt", "client_spent_bolt"):
        assert summary[name].idle_batches == 0, name
    windowed = summary["ad_ctr_minute_bolt"].idle_batches
    assert windowed >= 4  # 6 batches of input: all but the first (and the final one)
    for name in ("minute_ctr_bolt", "advertiser_day_bolt", "daily_spend_bolt",
                 "budget_alert_bolt", "user_sessions_bolt"):
        assert summary[name].idle_batches == windowed, name
    # fed by user_sessions_bolt only, which sends nothing: idle from the first batch
    assert summary["user_sessions_report_bolt"].idle_batches > windowed
    assert summary["ad_ctr_minute_bolt"].tuples_in == 0
    # tasks run, counted by how each found its state: par per batch that ran the stage
    ran = len([line for line in batches if " committed | " in line])

    def runs(name: str) -> int:
        c = summary[name]
        return c.reused + c.caught_up + c.restored + c.started

    assert runs("ads_ctr_bolt") == 2 * ran
    assert runs("ad_ctr_minute_bolt") == runs("minute_ctr_bolt") == 2 * (ran - windowed)
