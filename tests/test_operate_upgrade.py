"""Code upgrades on existing state: ``stormshift plan`` and the run's check before any batch.

The ledger project runs 250 readings with its first code, then its ``BalanceBolt`` is
edited in place, as a team ships a new version, and the run continues on the same
checkpoint and namespace (``stormshift`` processes, Spark local[2], real Redis). An
added attribute starts from ``initialize()`` while the kept one ends exact; a rename
goes through the bolt's ``migrate_state`` hook; a type change is refused by ``plan``
and by ``run`` (exit 2, one line, before any batch), and the state stays as it was.
"""

from __future__ import annotations

import json
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

pytestmark = [pytest.mark.spark]

ADDS_READINGS = '''
from collections import Counter

from streamparse import Bolt


class BalanceBolt(Bolt):
    outputs = ["account", "balance"]

    def initialize(self, conf, ctx):
        self.balances = Counter()
        self.readings = Counter()  # new in this version

    def process(self, tup):
        n, account = tup.values
        self.balances[account] += n
        self.readings[account] += 1
        self.emit([account, self.balances[account]])
'''

RENAMES = '''
from collections import Counter

from streamparse import Bolt


class BalanceBolt(Bolt):
    outputs = ["account", "balance"]

    def initialize(self, conf, ctx):
        self.totals = Counter()

    def migrate_state(self, old):
        if "balances" in old:
            old["totals"] = old.pop("balances")
        return old

    def process(self, tup):
        n, account = tup.values
        self.totals[account] += n
        self.emit([account, self.totals[account]])
'''

RESHAPES = '''
from streamparse import Bolt


class BalanceBolt(Bolt):
    outputs = ["account", "balance"]

    def initialize(self, conf, ctx):
        self.balances = 0  # one grand total now

    def process(self, tup):
        n, account = tup.values
        self.balances += n
        self.emit([account, self.balances])
'''


def _ship(project: Path, source: str) -> None:
    (project / "src" / "bolts" / "balance.py").write_text(source)


def _plan(tmp_path: Path, project: Path, redis_url: str, namespace: str, *extra: str):
    return stormshift(tmp_path, "plan", str(project), "--redis", redis_url, "--namespace",
                      namespace, "--checkpoint", str(tmp_path / "ck"), *extra)


def _first_version(tmp_path: Path, redis_url: str, namespace: str) -> tuple[Path, list[str]]:
    project = copy_ledger(tmp_path)
    args = spark_run_args(project, tmp_path, redis_url, namespace)
    first = report(stormshift(tmp_path, *args, "--max-tuples", "250"))
    assert first["exit_code"] == 0 and first["components"]["balance"]["tuples_in"] == 250
    return project, args


def test_an_upgrade_adding_an_attribute_mid_stream_ends_with_exact_totals(
        tmp_path: Path, redis_url: str, namespace: str) -> None:
    project, args = _first_version(tmp_path, redis_url, namespace)
    _ship(project, ADDS_READINGS)
    planned = _plan(tmp_path, project, redis_url, namespace, "--json")
    assert planned.returncode == 0, planned.stderr
    (balance,) = json.loads(planned.stdout)["components"]
    assert balance["kept"] == ["balances"] and balance["added"] == ["readings"]
    assert balance["removed"] == [] and balance["refused"] == [] and not balance["rewrite"]

    second = report(stormshift(tmp_path, *args, "--until-done"))
    assert second["exit_code"] == 0, second
    after = committed(redis_url, namespace, tmp_path, "balance", 2)
    assert sum((t["balances"] for t in after), Counter()) == expected_balances(600)
    readings = sum((t["readings"] for t in after), Counter())
    assert readings == Counter(f"a{n % 7}" for n in range(250, 600))  # from the upgrade on


def test_a_type_change_is_refused_and_a_rename_goes_through_the_hook(
        tmp_path: Path, redis_url: str, namespace: str) -> None:
    project, args = _first_version(tmp_path, redis_url, namespace)
    before = committed(redis_url, namespace, tmp_path, "balance", 2)

    _ship(project, RESHAPES)
    planned = _plan(tmp_path, project, redis_url, namespace)
    assert planned.returncode == 2
    assert "changed balances: collections.Counter -> int" in planned.stdout and "(refused)" in planned.stdout
    refused = stormshift(tmp_path, *args, "--until-done")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    line = next(t for t in refused.stderr.splitlines() if t.startswith("error:"))
    assert "'balance'" in line and "'balances'" in line and "Counter" in line and "int" in line
    assert "migrate_state" in line and "state reset" in line
    assert committed(redis_url, namespace, tmp_path, "balance", 2) == before  # nothing moved

    _ship(project, RENAMES)
    planned = _plan(tmp_path, project, redis_url, namespace)
    assert planned.returncode == 0, planned.stderr
    assert "rewritten via migrate_state()" in planned.stdout and "kept totals" in planned.stdout
    second = report(stormshift(tmp_path, *args, "--until-done"))
    assert second["exit_code"] == 0, second
    assert any("migrate_state()" in w for w in second["warnings"])
    after = committed(redis_url, namespace, tmp_path, "balance", 2)
    assert all("balances" not in t for t in after)
    assert sum((t["totals"] for t in after), Counter()) == expected_balances(600)
