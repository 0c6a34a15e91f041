"""The shipped examples on the Spark engine give the same totals as the oracle / local engine."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import pytest

from stormshift.engines.spark import SparkEngine
from stormshift.topology.loader import load_topology

pytestmark = [pytest.mark.spark, pytest.mark.redis]
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while executing it
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _expected_module():
    return _load("adclicks_expected", EXAMPLES / "adclicks" / "expected.py")


@pytest.mark.parametrize("seed", [5])
def test_adclicks_matches_independent_oracle(spark, redis_url, namespace, tmp_path, seed):
    """The legacy totals and the event-time reports (``adclicks.windows``, on by default):
    per-ad-minute CTR, per-advertiser-day spend, budget alerts and sessions equal the oracle,
    with the batches cut at a size drawn from a printed seed."""
    events, malformed, budget = 3000, 0.01, 2_000_000  # $2 a day: some advertiser-days alert
    batch = random.Random(seed).randint(600, 1500)
    print(f"seed={seed} batch_max_tuples={batch}")
    graph = load_topology(str(EXAMPLES / "adclicks"), overrides={
        "adclicks.events": events, "adclicks.malformed_rate": malformed,
        "adclicks.daily_budget_micros": budget})
    engine = SparkEngine(graph, checkpoint_dir=str(tmp_path / "ck"), redis_url=redis_url, spark=spark,
                         namespace=namespace, until_done=True, batch_max_tuples=batch)
    summary = engine.run()
    oracle = _expected_module()
    lines = list(oracle.generated_lines(7, events, malformed_rate=malformed))
    expected = oracle.compute(lines)
    ctr = {ad: tuple(v[1:4]) for ad, v in summary.latest("ads_ctr_bolt").items()}
    assert ctr == {ad: tuple(t) for ad, t in expected.ctr_by_ad.items()}
    spend = {adv: v[1] for adv, v in summary.latest("client_spent_bolt").items()}
    assert spend == expected.spend_by_advertiser
    assert summary["ad_log_spout"].tuples_out == events
    assert summary.total("dead_lettered") == expected.malformed
    adgen = _load("adclicks_adgen", EXAMPLES / "adclicks" / "src" / "adgen.py")
    win = oracle.compute_windowed(lines, adgen.advertiser_zone, budget)
    minutes = summary.latest("minute_ctr_bolt", key_len=2)
    assert {k: (v[2], v[4]) for k, v in minutes.items()} == win.ctr_by_ad_minute, f"seed={seed}"
    days = summary.latest("daily_spend_bolt", key_len=2)
    assert {k: v[3] for k, v in days.items()} == win.spend_by_advertiser_day, f"seed={seed}"
    alerts = summary.output("budget_alert_bolt")
    assert sorted((a[0], a[1]) for a in alerts) == win.alerts != []  # each day alerted once
    sessions = summary.latest("user_sessions_report_bolt")
    assert {u: tuple(v[1:]) for u, v in sessions.items()} == win.sessions_by_user, f"seed={seed}"


def test_wordcount_matches_local_engine(spark, redis_url, namespace, tmp_path):
    from stormshift.engines.local import LocalEngine

    graph = load_topology(str(EXAMPLES / "wordcount"))
    local = LocalEngine(graph).run(max_tuples=1200)
    engine = SparkEngine(graph, checkpoint_dir=str(tmp_path / "ck"), redis_url=redis_url, spark=spark,
                         namespace=namespace, batch_max_tuples=400)
    summary = engine.run(max_tuples=1200)
    want = {w: v[1] for w, v in local.latest("count_bolt").items()}
    assert {w: v[1] for w, v in summary.latest("count_bolt").items()} == want
    assert summary["count_bolt"].tuples_in == 1200 == local["count_bolt"].tuples_in


def test_duration_stops_between_batches_and_the_rerun_continues_exactly(spark, redis_url, namespace,
                                                                        tmp_path, capfd):
    """``--duration`` counts from the first batch, lets the batch in flight commit and stops
    the query idle: every batch it ran committed, nothing in Spark's stderr about a stack
    overflow, and a rerun from the checkpoint ends with the oracle's exact results."""
    events = 30000
    # the legacy topology alone (-o adclicks.windows=false), for time: 60 batches of 500, each
    # with 3 stages instead of 7; a windowed run restarted from its checkpoint is the fault
    # suite's (tests/test_faults.py: driver kills, then a rerun to the end, equal outputs)
    graph = load_topology(str(EXAMPLES / "adclicks"),
                          overrides={"adclicks.events": events, "adclicks.windows": False})

    def engine(**kw):
        return SparkEngine(graph, checkpoint_dir=str(tmp_path / "ck"), redis_url=redis_url,
                           spark=spark, namespace=namespace, batch_max_tuples=500, **kw)

    first = engine().run(duration_secs=2.0)
    assert first.stop_reason == "duration"
    assert 0 < first.spout_tuples < events  # a batch ran: start-up was not counted
    assert "StackOverflowError" not in capfd.readouterr().err
    second = engine(until_done=True).run()
    assert first.spout_tuples + second.spout_tuples == events
    oracle = _expected_module()
    expected = oracle.compute(oracle.generated_lines(7, events))
    spend = {adv: v[1] for adv, v in second.latest("client_spent_bolt").items()}
    assert spend == expected.spend_by_advertiser
