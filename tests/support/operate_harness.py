"""The ``ledger`` project (tests/fixtures/operate/ledger) as an operator runs it: copied to a
scratch dir (so its code can be upgraded in place), ``stormshift`` commands as separate
processes (each run its own JVM and Python workers, as after a real restart), and an
independent oracle: each account's balance is the sum of the readings n it was sent."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import redis

from stormshift.state.final import committed_attributes

ROOT = Path(__file__).resolve().parents[2]
LEDGER = Path(__file__).resolve().parents[1] / "fixtures" / "operate" / "ledger"


def expected_balances(readings: int, start: int = 0) -> Counter:
    """What BalanceBolt must hold after readings ``start`` .. ``readings - 1``."""
    want: Counter = Counter()
    for n in range(start, readings):
        want[f"a{n % 7}"] += n
    return want


def copy_ledger(tmp_path: Path) -> Path:
    project = tmp_path / "ledger"
    shutil.copytree(LEDGER, project)
    return project


def env() -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("STORMSHIFT_")}
    out.update(PYTHONPATH=str(ROOT), STORMSHIFT_PURE="1", COLUMNS="200")
    return out


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "stormshift", *args]


def stormshift(tmp_path: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command(*args), capture_output=True, text=True,
                          timeout=timeout, env=env(), cwd=tmp_path, check=False)


def spark_run_args(project: Path, tmp_path: Path, redis_url: str, namespace: str,
                   *extra: str) -> list[str]:
    return ["run", str(project), "--master", "local[2]", "--redis", redis_url, "--namespace",
            namespace, "--checkpoint", str(tmp_path / "ck"), "--batch-max-tuples", "40",
            "--json", *extra]


def report(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    try:
        return json.loads(done.stdout)
    except ValueError:
        raise AssertionError(f"exit {done.returncode}\n{done.stdout}\n{done.stderr}") from None


def committed(redis_url: str, namespace: str, tmp_path: Path, component: str,
              par: int) -> list[dict[str, Any]]:
    """Each task's committed attributes (HMAC key from the checkpoint's key file)."""
    r = redis.Redis.from_url(redis_url)
    key = (tmp_path / "ck" / "stormshift-state.key").read_text().strip().encode()
    return [committed_attributes(r, namespace, key, component, t) for t in range(par)]
