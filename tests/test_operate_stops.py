"""Clean stops: SIGTERM to a ``stormshift run`` process, on both engines.

Spark (local[2], real Redis): the ledger runs until a few batches committed, gets
SIGTERM, lets the batch in flight commit, prints its summary (accounting holding, the
stop named) and exits 130; the next run on the same checkpoint continues and every
account's balance ends exact against an independent sum. A second SIGTERM while the
stop waits abandons the batch in flight instead (uncommitted, replayed next run): exact
too. Local engine: SIGTERM mid-stream exits 130 with the summary and its accounting.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
import redis
from support.cpu_progress import cpu_seconds
from support.operate_harness import (
    command,
    committed,
    copy_ledger,
    env,
    expected_balances,
    report,
    spark_run_args,
    stormshift,
)

from stormshift.engines.spark.records import keys as RK
from stormshift.state.commit import CommitLog

READINGS = 300


def _sigterm_after(proc: subprocess.Popen[str], ready: object, signals: int = 1,
                   timeout: float = 240) -> tuple[str, str]:
    deadline = time.monotonic() + timeout
    try:
        while not ready() and proc.poll() is None:  # type: ignore[operator]
            assert time.monotonic() < deadline, "the run never got going"
            time.sleep(0.1)
        for _ in range(signals):
            proc.send_signal(signal.SIGTERM)
            time.sleep(0.3)
        return proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.spark
@pytest.mark.parametrize("signals", [1, 2], ids=["commits", "abandons"])
def test_spark_sigterm_stops_cleanly_and_the_next_run_continues_exactly(
        tmp_path: Path, redis_url: str, namespace: str, signals: int) -> None:
    project = copy_ledger(tmp_path)
    args = spark_run_args(project, tmp_path, redis_url, namespace, "-o",
                          f"ledger.readings={READINGS}", "-o", "ledger.lookup_ms=30",
                          "--batch-max-tuples", "30")
    r = redis.Redis.from_url(redis_url)

    def mid_batch() -> bool:  # two batches committed, a task of the next one started
        txid = CommitLog(r, namespace).committed()
        return txid >= 2 and bool(r.exists(RK.batch_attempts_key(namespace, txid + 1)))

    proc = subprocess.Popen(command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env(), cwd=tmp_path)
    out, err = _sigterm_after(proc, mid_batch, signals)
    assert proc.returncode == 130, err
    first = json.loads(out)
    assert first["stop_reason"] == "interrupted" and first["exit_code"] == 130
    assert first["accounting"]["topology"]["holds"]
    stopped = next(w for w in first["warnings"] if w.startswith("interrupted"))
    assert ("abandoned" if signals == 2 else "in flight committed") in stopped, stopped
    done = first["components"]["balance"]["tuples_in"]
    assert 0 < done < READINGS
    assert sum((t["balances"] for t in committed(redis_url, namespace, tmp_path, "balance", 2)),
               Counter()) == expected_balances(done)  # what the summary counted is committed

    second = report(stormshift(tmp_path, *args, "--until-done"))
    assert second["exit_code"] == 0, second
    assert second["components"]["balance"]["tuples_in"] == READINGS - done
    after = committed(redis_url, namespace, tmp_path, "balance", 2)
    assert sum((t["balances"] for t in after), Counter()) == expected_balances(READINGS)


def test_local_sigterm_mid_stream_exits_130_with_the_accounting(tmp_path: Path) -> None:
    project = copy_ledger(tmp_path)
    proc = subprocess.Popen(command("run", str(project), "--engine", "local", "--json", "-o",
                                    "ledger.readings=100000000"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env(), cwd=tmp_path)
    out, err = _sigterm_after(proc, lambda: cpu_seconds(proc) >= 1.5)  # ~3x its start-up
    assert proc.returncode == 130, err
    summary = json.loads(out)
    assert summary["stop_reason"] == "interrupted" and summary["exit_code"] == 130
    assert summary["accounting"]["topology"]["holds"], summary["accounting"]
    assert summary["components"]["balance"]["tuples_in"] > 0
