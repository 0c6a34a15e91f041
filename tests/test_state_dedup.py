"""Dedup of re-emitted tuples (exact and Bloom), on the real Redis server."""

from __future__ import annotations

import math

import pytest
from support.state_fixtures import commit

from stormshift.errors import FencedError
from stormshift.state.dedup import (
    BloomDedup,
    ExactDedup,
    choose,
    expected_false_drops,
    false_positive_rate,
)
from stormshift.state.fencing import acquire_epoch
from stormshift.state.scope import TaskScope

MIN_MS = 60_000

pytest_plugins = ["support.state_fixtures"]


def scope(r, namespace, txid, epoch=None):
    epoch = epoch or acquire_epoch(r, namespace, "spout", 0)
    return TaskScope(r, namespace, "spout", 0, txid, epoch)


@pytest.mark.parametrize("mode", ["exact", "bloom"])
def test_duplicates_within_window_are_dropped_and_replays_are_not(redis_client, ns, mode):
    if mode == "exact":
        d = ExactDedup(redis_client, ns, "clicks", retention_ms=10 * MIN_MS, bucket_ms=MIN_MS)
    else:
        d = BloomDedup(redis_client, ns, "clicks", retention_ms=10 * MIN_MS, segments=5, m_bits=1 << 16, k=5)
    t0 = 1_700_000_000_000
    with scope(redis_client, ns, 1) as s:
        assert d.seen(["a", "b", "a"], t0, s) == [False, False, True]  # in-batch duplicate
        assert d.seen(["b", "c"], t0 + 1, s) == [True, False]  # later call, same attempt
    with scope(redis_client, ns, 1) as s:  # replay of txid 1: its own ids are not duplicates
        assert d.seen(["a", "b", "c"], t0, s) == [False, False, False]
    commit(redis_client, ns, 1)
    with scope(redis_client, ns, 2) as s:  # re-emitted in a later batch: duplicates
        assert d.seen(["a", "c", "d"], t0 + 3 * MIN_MS, s) == [True, True, False]
    commit(redis_client, ns, 2)
    with scope(redis_client, ns, 3) as s:  # past the retention window: forgotten
        assert d.seen(["a", "d"], t0 + 30 * MIN_MS, s) == [False, False]


def test_dedup_writes_are_fenced(redis_client, ns):
    d = ExactDedup(redis_client, ns, "clicks", retention_ms=MIN_MS)
    old = acquire_epoch(redis_client, ns, "spout", 0)
    acquire_epoch(redis_client, ns, "spout", 0)
    with pytest.raises(FencedError):
        d.seen(["a"], 0, TaskScope(redis_client, ns, "spout", 0, 1, old))


def test_choose_and_estimates():
    m, k = choose(100_000, 0.01)
    assert (m, k) == (958_506, 7)
    assert false_positive_rate(100_000, m, k) == pytest.approx(0.01, rel=0.01)
    assert expected_false_drops(100_000, m, k, 1_000_000, segments=2) == pytest.approx(
        1e6 * (1 - (1 - false_positive_rate(100_000, m, k)) ** 2)
    )
    assert false_positive_rate(0, m, k) == 0.0


@pytest.mark.slow
def test_bloom_false_positive_rate_over_a_million_ids_is_within_the_estimate(redis_client, ns):
    n, target = 50_000, 0.02
    d = BloomDedup.for_rate(redis_client, ns, "fp", retention_ms=MIN_MS, ids_per_slice=n,
                            fp_rate=target, segments=1)
    with scope(redis_client, ns, 1) as s:
        dups = d.seen([f"member-{i}" for i in range(n)], 0, s)
    assert sum(dups) < n * target * 2  # the filter fills up while inserting: a few early FPs
    probes = 1_000_000
    hits = sum(d.contains([f"probe-{i}" for i in range(probes)], 0))
    expected = expected_false_drops(n, d.m_bits, d.k, probes)
    sigma = math.sqrt(expected)
    print(f"Bloom m={d.m_bits} k={d.k} n={n}: {hits} false positives in {probes} (estimate {expected:.0f})")
    assert abs(hits - expected) < 5 * sigma + 0.05 * expected
    assert all(d.contains([f"member-{i}" for i in range(0, n, 97)], 0))  # no false negatives
