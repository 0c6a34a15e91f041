"""``--par COMPONENT=N`` on an existing checkpoint (Storm's ``storm rebalance -e``).

The ledger project runs as an operator runs it (``stormshift run`` processes on Spark
local[2], real Redis): 250 readings at the declared par 2, then the rest with
``--par balance=3``: every account's balance ends exact against an independent sum, each
on the task the fields grouping now sends it to. A change the state cannot follow (a
spout's par on a committed checkpoint) is refused before any batch, with the fix.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from support.operate_harness import (
    committed,
    copy_ledger,
    expected_balances,
    report,
    spark_run_args,
    stormshift,
)

from stormshift.adapters.routing import hash_one

pytestmark = [pytest.mark.spark]


def test_rebalance_2_to_3_mid_stream_keeps_exact_totals(
        tmp_path: Path, redis_url: str, namespace: str) -> None:
    project = copy_ledger(tmp_path)
    args = spark_run_args(project, tmp_path, redis_url, namespace)
    first = report(stormshift(tmp_path, *args, "--max-tuples", "250"))
    assert first["exit_code"] == 0 and first["components"]["balance"]["tuples_in"] == 250
    before = committed(redis_url, namespace, tmp_path, "balance", 2)
    assert sum((t["balances"] for t in before), Counter()) == expected_balances(250)

    refused = stormshift(tmp_path, *args, "--until-done", "--par", "readings=2")
    assert refused.returncode == 2, refused.stderr
    assert "'readings'" in refused.stderr and "keep par at 1" in refused.stderr
    assert "Traceback" not in refused.stderr

    second = report(stormshift(tmp_path, *args, "--until-done", "--par", "balance=3"))
    assert second["exit_code"] == 0, second
    assert second["components"]["balance"]["tuples_in"] == 600 - 250
    assert any("par 2 -> 3" in w for w in second["warnings"])
    after = committed(redis_url, namespace, tmp_path, "balance", 3)
    for task, attrs in enumerate(after):
        assert attrs["balances"] and all(hash_one(k) % 3 == task for k in attrs["balances"])
    assert sum((t["balances"] for t in after), Counter()) == expected_balances(600)


def test_inspect_par_shows_the_effective_par(tmp_path: Path) -> None:
    import json

    done = stormshift(tmp_path, "inspect", str(copy_ledger(tmp_path)), "--par", "balance=3",
                      "--json")
    graph = {c["name"]: c for c in json.loads(done.stdout)["components"]}
    assert graph["balance"]["par"] == 3 and graph["balance"]["task_ids"] == [1, 2, 3]
    assert graph["readings"]["task_ids"] == [4]
    bad = stormshift(tmp_path, "inspect", str(tmp_path / "ledger"), "--par", "ballance=3")
    assert bad.returncode == 2
    assert "'ballance'" in bad.stderr and "balance, readings" in bad.stderr
