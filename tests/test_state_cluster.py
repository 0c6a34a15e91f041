"""The map, fencing and snapshot suites again, on a local 3-primary Redis Cluster."""

from __future__ import annotations

import uuid

import pytest
import test_state_fencing as fencing
import test_state_maps as maps
import test_state_snapshots as snapshots
import test_state_task_txn as txn
from state_fixtures import LocalCluster, drop_namespace

from stormshift.state.connection import connect

pytestmark = [pytest.mark.slow, pytest.mark.redis]

pytest_plugins = ["state_fixtures"]


@pytest.fixture(scope="module")
def cluster():
    c = LocalCluster()
    c.start()
    yield connect(c.url)
    c.close()


CASES = [
    maps.test_trident_semantics_table,
    maps.test_replays_of_set_and_update_follow_the_table,
    maps.test_reads_see_own_writes_and_opaque_replay_reads_prev,
    maps.test_values_round_trip_through_msgpack_and_floats,
    maps.test_flush_is_one_round_trip_whatever_the_key_count,
    maps.test_failed_batch_writes_nothing,
    fencing.test_zombie_writing_after_successor_committed_is_rejected,
    fencing.test_write_at_or_below_committed_txid_is_rejected_even_with_fresh_epoch,
    fencing.test_two_concurrent_attempts_of_one_batch_newer_wins_totals_exact,
    fencing.test_checkpoint_binding_keeps_txids_growing,
    snapshots.test_load_returns_newest_committed_version_below_txid,
    snapshots.test_tampered_snapshot_is_refused_never_unpickled,
    txn.test_a_commit_writes_every_step_in_one_round,
    txn.test_a_stale_epochs_commit_writes_nothing,
    txn.test_a_txid_at_or_below_the_committed_one_is_refused,
    txn.test_a_replayed_commit_of_the_same_txid_lands_once,
]


@pytest.mark.parametrize("case", CASES, ids=[c.__name__ for c in CASES])
def test_suite_on_redis_cluster(cluster, case):
    ns = "c" + uuid.uuid4().hex[:12]
    try:
        case(cluster, ns)
        # The case's own assertions ran against the cluster: its keys are there, across nodes.
        written = list(cluster.scan_iter(match=f"*{ns}*", target_nodes=cluster.ALL_NODES))
        assert written, f"{case.__name__} wrote nothing to the cluster"
    finally:
        drop_namespace(cluster, ns)
