"""The engine refuses to resume when Redis lost state Spark believes committed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import redis

FIXTURES = Path(__file__).parent / "spark_fixtures"
sys.path.insert(0, str(FIXTURES))

import sparktopo

from stormshift.engines.spark import SparkEngine
from stormshift.engines.spark.driver.recovery import check_not_behind, last_spark_commit
from stormshift.errors import StateError
from stormshift.state import keys as K
from stormshift.topology.loader import load_topology


def test_check_compares_spark_commit_log_with_redis(tmp_path: Path) -> None:
    ck = tmp_path / "spark"
    assert last_spark_commit(str(ck)) is None
    (ck / "commits").mkdir(parents=True)
    for batch in (0, 1, 2):
        (ck / "commits" / str(batch)).write_text("v1\n")
    (ck / "commits" / ".2.crc").write_text("")
    assert last_spark_commit(str(ck)) == 2
    check_not_behind(str(ck), base=10, committed=12, where="r")  # in step
    check_not_behind(str(ck), base=10, committed=13, where="r")  # Redis ahead: a batch re-run skips
    with pytest.raises(StateError, match=r"committed txid 11.*batch 2 \(txid 12\).*--reset-state"):
        check_not_behind(str(ck), base=10, committed=11, where="r")


@pytest.mark.spark
@pytest.mark.redis
def test_run_refuses_to_skip_batches_redis_lost(spark, redis_url, namespace, tmp_path):
    data = tmp_path / "in"
    data.mkdir()
    with (data / "part-000.jsonl").open("w") as fh:
        for n in range(60):
            fh.write(json.dumps({"n": n, "key": f"k{n % 7}"}) + "\n")
    graph = load_topology(sparktopo.Replayable, overrides={"jsonlines.path": str(data)})

    def engine() -> SparkEngine:
        return SparkEngine(graph, checkpoint_dir=str(tmp_path / "ck"), redis_url=redis_url, spark=spark,
                           namespace=namespace, batch_max_tuples=10, until_done=False)

    first = engine().run(max_batches=3)
    assert first.stop_reason == "max_batches"
    r = redis.Redis.from_url(redis_url)
    committed = int(r.hget(K.commit_key(namespace), "committed"))
    last = last_spark_commit(str(tmp_path / "ck" / "spark"))
    # stop() may interrupt Spark's commit-log write of the last batch, so Spark
    # can be one batch behind Redis here; "lose" what Spark's last commit holds.
    assert last is not None and last <= committed, (last, committed)
    r.hset(K.commit_key(namespace), "committed", last - 1)  # base 0: txid = batch id
    with pytest.raises(StateError, match="Redis lost committed state"):
        engine().run(max_batches=1)
