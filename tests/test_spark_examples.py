"""The shipped examples on the Spark engine give the same totals as the oracle / local engine."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from stormshift.engines.spark import SparkEngine
from stormshift.topology.loader import load_topology

pytestmark = [pytest.mark.spark, pytest.mark.redis]
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _expected_module():
    spec = importlib.util.spec_from_file_location("adclicks_expected", EXAMPLES / "adclicks" / "expected.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while executing it
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_adclicks_matches_independent_oracle(spark, redis_url, namespace, tmp_path):
    events, malformed = 3000, 0.01
    graph = load_topology(str(EXAMPLES / "adclicks"),
                          overrides={"adclicks.events": events, "adclicks.malformed_rate": malformed})
    engine = SparkEngine(graph, checkpoint_dir=str(tmp_path / "ck"), redis_url=redis_url, spark=spark,
                         namespace=namespace, until_done=True, batch_max_tuples=1500)
    summary = engine.run()
    oracle = _expected_module()
    expected = oracle.compute(oracle.generated_lines(7, events, malformed_rate=malformed))
    ctr = {ad: tuple(v[1:4]) for ad, v in summary.latest("ads_ctr_bolt").items()}
    assert ctr == {ad: tuple(t) for ad, t in expected.ctr_by_ad.items()}
    spend = {adv: v[1] for adv, v in summary.latest("client_spent_bolt").items()}
    assert spend == expected.spend_by_advertiser
    assert summary["ad_log_spout"].tuples_out == events
    assert summary.total("dead_lettered") == expected.malformed


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
    graph = load_topology(str(EXAMPLES / "adclicks"), overrides={"adclicks.events": events})

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
