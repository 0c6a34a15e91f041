"""The seed of a bolt's dict attribute on a real Redis, through a project hook: the
hook's values become each task's committed snapshot (its share by the fields grouping),
in the seed's one transaction, and come back merged for a hand-back through the hook's
inverse. No Spark: the first batch's restore is ``committed_attributes``' read, the same
``SnapshotStore.load`` a task makes (the Spark run is ``test_cutover_e2e.py``)."""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path

import redis

from stormshift.cutover.attrs import split_values
from stormshift.cutover.legacy import write_store
from stormshift.cutover.plan import seeds_of
from stormshift.cutover.port import port_values
from stormshift.cutover.seed import seed_port
from stormshift.state import keys as K
from stormshift.state.commit import CommitLog
from stormshift.state.final import committed_attributes
from stormshift.state.snapshots import SnapshotStore, run_key
from stormshift.topology.loader import load_topology

PORT = Path(__file__).resolve().parent / "fixtures" / "cutover" / "port"


def test_a_hook_seeded_attribute_is_each_tasks_committed_snapshot_and_hands_back(
        tmp_path: Path, redis_url: str, namespace: str) -> None:
    r = redis.Redis.from_url(redis_url)
    zset = f"cut:{uuid.uuid4().hex[:8]}:words"
    legacy = {"it": 3, "was": 5, "the": 8, "best": 1, "of": 2, "times": 13}
    r.zadd(zset, legacy)
    try:
        graph = load_topology(str(PORT), name="words_attr", overrides={
            "words.redis_url": redis_url, "words.zset": zset,
            "redis_streams.url": redis_url, "redis_streams.keys": [f"{zset}:in"],
            "redis_streams.json_fields": ["word", "rid"],
            "cutover.seed": {"count_bolt": {"attr": "counts", "from": {
                "hook": "words:seed_counts", "hook_back": "words:hand_back_counts"}}}})
        checkpoint = str(tmp_path / "checkpoint")
        r.hset(K.commit_key(namespace), "committed", 6)  # an earlier life of the namespace
        record, written = seed_port(graph, r, namespace, {}, checkpoint, False)
        assert (record["seed_txid"], written, record["seeded"]) == (7, 6, {"count_bolt.counts": 6})
        assert CommitLog(r, namespace).committed() == 7
        key = run_key(graph.config, checkpoint, make=False)[0]
        tasks = [committed_attributes(r, namespace, key, "count_bolt", t) for t in range(2)]
        comp = graph.component("count_bolt")
        assert [t["counts"] for t in tasks] == split_values(comp, legacy, Counter())
        assert all(type(t["counts"]) is Counter and t["counts"] for t in tasks)
        assert SnapshotStore(r, namespace, key).par_of("count_bolt") == 2
        [seed] = seeds_of(graph.config, {"count_bolt"})
        assert port_values(graph, r, namespace, seed, record) == legacy
        r.delete(zset)
        write_store(seed, r, comp.config, {w: n + 1 for w, n in legacy.items()})
        assert {k.decode(): int(v) for k, v in r.zrange(zset, 0, -1, withscores=True)} == {
            w: n + 1 for w, n in legacy.items()}
    finally:
        r.delete(zset)
