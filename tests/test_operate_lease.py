"""One live run per namespace, as an operator meets it (real Redis, real Spark, separate
``stormshift`` processes: DESIGN.md "One live run per namespace").

The ledger (tests/fixtures/operate/ledger) runs slowly enough to be live while other
commands try the namespace: a second ``run``, ``--reset-state``, ``--adopt-state`` and
``state reset`` are refused in one short line naming it, before any JVM (a ``--takeover``
its own checks refuse leaves it alone too), and it finishes exact; ``stop`` ends it at a batch boundary (exit 130, as SIGTERM) and ``ps`` lists it
only while it runs; a SIGKILLed driver's lease is taken over by the next start with one
line; ``--takeover`` replaces a live run, which exits 6 with its own line, and the state
ends exact. Every balance is checked against ``expected_balances`` (an independent sum).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from support.operate_harness import (
    command,
    committed,
    copy_ledger,
    env,
    expected_balances,
    report,
    spark_run_args,
)

from stormshift.state.commit import CommitLog
from stormshift.state.lease import read_lease

TTL_SECS = "6"  # the lease TTL of these runs (renewed every 1.5 s)


def _env() -> dict[str, str]:
    return {**env(), "STORMSHIFT_LEASE_TTL_SECS": TTL_SECS}


def _start(tmp_path: Path, args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(command(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=_env(), cwd=tmp_path, start_new_session=True)


def _cli(tmp_path: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command(*args), capture_output=True, text=True, timeout=timeout,
                          env=_env(), cwd=tmp_path, check=False)


def _wait_for(ready: Callable[[], bool], proc: subprocess.Popen[str], what: str,
              timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"the run ended before {what}: exit {proc.returncode}\n{out}\n{err}")
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.1)


def _committed_at_least(r: redis.Redis, namespace: str, txid: int) -> Callable[[], bool]:
    return lambda: CommitLog(r, namespace).committed() >= txid


@pytest.fixture
def live(tmp_path: Path) -> Iterator[list[subprocess.Popen[str]]]:
    """The processes a test started; killed (with their JVMs) if still there at the end."""
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _refused(done: subprocess.CompletedProcess[str], elapsed: float, pid: int) -> str:
    """A refusal as the brief has it: exit 2, one short message naming the live run."""
    text = done.stdout + done.stderr
    assert done.returncode == 2, text
    assert "Traceback" not in text and "Spark UI" not in text, text
    assert len(text.strip().splitlines()) <= 12, text
    assert f"pid {pid}" in text and "stormshift stop" in text, text
    assert elapsed < 20, f"refused only after {elapsed:.0f} s: a JVM started?"
    return text


@pytest.mark.spark
def test_beside_a_live_run_every_start_is_refused_and_the_live_run_finishes_exact(
        tmp_path: Path, redis_url: str, namespace: str,
        live: list[subprocess.Popen[str]]) -> None:
    project = copy_ledger(tmp_path)
    opts = ["-o", "ledger.readings=600", "-o", "ledger.lookup_ms=40"]
    first = _start(tmp_path, spark_run_args(project, tmp_path, redis_url, namespace, *opts,
                                            "--until-done"))
    live.append(first)
    r = redis.Redis.from_url(redis_url)
    _wait_for(_committed_at_least(r, namespace, 1), first, "two batches committed")

    listed = json.loads(_cli(tmp_path, "ps", "--redis", redis_url, "--json").stdout)["runs"]
    mine = [run for run in listed if run["namespace"] == namespace]
    assert [run["pid"] for run in mine] == [first.pid] and mine[0]["live"], listed
    other_ck = str(tmp_path / "ck2")
    for extra in ([], ["--checkpoint", other_ck], ["--checkpoint", other_ck, "--reset-state"],
                  ["--adopt-state", "--checkpoint", other_ck]):
        t0 = time.monotonic()
        done = _cli(tmp_path, *spark_run_args(project, tmp_path, redis_url, namespace, *opts),
                    *extra)
        text = _refused(done, time.monotonic() - t0, first.pid)
        assert "integrity" not in text and "tamper" not in text, text
    t0 = time.monotonic()
    _refused(_cli(tmp_path, "state", "reset", namespace, "--yes", "--redis", redis_url),
             time.monotonic() - t0, first.pid)
    # a replacement that its own checks refuse leaves the live run alone
    done = _cli(tmp_path, *spark_run_args(project, tmp_path, redis_url, namespace, *opts),
                "--checkpoint", other_ck, "--takeover")
    assert done.returncode == 2 and f"belongs to checkpoint {tmp_path / 'ck'}" in done.stderr, \
        done.stderr
    assert "Traceback" not in done.stderr and first.poll() is None
    assert not (tmp_path / "ck2" / "spark").exists()  # the refused runs wrote no checkpoint

    out, err = first.communicate(timeout=400)
    summary = json.loads(out)
    assert first.returncode == 0 and summary["exit_code"] == 0, err
    balances = sum((t["balances"] for t in committed(redis_url, namespace, tmp_path,
                                                     "balance", 2)), Counter())
    assert balances == expected_balances(600)
    assert read_lease(r, namespace)[1] is None  # released
    listed = json.loads(_cli(tmp_path, "ps", "--redis", redis_url, "--json").stdout)["runs"]
    assert namespace not in [run["namespace"] for run in listed]


@pytest.mark.spark
def test_stop_ends_a_live_run_at_a_batch_boundary_as_sigterm_does(
        tmp_path: Path, redis_url: str, namespace: str,
        live: list[subprocess.Popen[str]]) -> None:
    project = copy_ledger(tmp_path)
    args = spark_run_args(project, tmp_path, redis_url, namespace, "-o",
                          "ledger.readings=100000", "-o", "ledger.lookup_ms=20")
    run = _start(tmp_path, args)
    live.append(run)
    r = redis.Redis.from_url(redis_url)
    _wait_for(_committed_at_least(r, namespace, 1), run, "two batches committed")
    shown = _cli(tmp_path, "ps", "--redis", redis_url)
    assert namespace in shown.stdout and f"pid {run.pid}" in shown.stdout, shown

    stopped = _cli(tmp_path, "stop", namespace, "--redis", redis_url, "--timeout", "120")
    assert stopped.returncode == 0, stopped.stderr
    assert len(stopped.stdout.strip().splitlines()) == 1 and "stopped" in stopped.stdout
    out, err = run.communicate(timeout=120)
    summary = json.loads(out)
    assert run.returncode == 130 and summary["stop_reason"] == "interrupted", err
    assert any(w.startswith("stopped by `stormshift stop`") for w in summary["warnings"])
    assert summary["accounting"]["topology"]["holds"]
    done = summary["components"]["balance"]["tuples_in"]
    balances = sum((t["balances"] for t in committed(redis_url, namespace, tmp_path,
                                                     "balance", 2)), Counter())
    assert balances == expected_balances(done)  # what it counted is what it committed
    assert namespace not in _cli(tmp_path, "ps", "--redis", redis_url).stdout
    again = _cli(tmp_path, "stop", namespace, "--redis", redis_url)
    assert again.returncode == 1 and "nothing to stop" in again.stderr


@pytest.mark.spark
def test_a_killed_drivers_lease_is_taken_over_by_the_next_start_which_finishes_exact(
        tmp_path: Path, redis_url: str, namespace: str,
        live: list[subprocess.Popen[str]]) -> None:
    project = copy_ledger(tmp_path)
    args = spark_run_args(project, tmp_path, redis_url, namespace, "-o",
                          "ledger.readings=400", "-o", "ledger.lookup_ms=20")
    run = _start(tmp_path, args)
    live.append(run)
    r = redis.Redis.from_url(redis_url)
    _wait_for(_committed_at_least(r, namespace, 1), run, "two batches committed")
    os.killpg(run.pid, signal.SIGKILL)  # the driver, its JVM and workers: no release
    run.wait()
    assert read_lease(r, namespace)[1] is not None  # left behind

    done = _cli(tmp_path, *args, "--until-done")
    summary = report(done)
    assert summary["exit_code"] == 0, done.stderr
    taking = [line for line in summary["warnings"] if "taking over" in line]
    assert len(taking) == 1 and f"pid {run.pid}" in taking[0], summary["warnings"]
    balances = sum((t["balances"] for t in committed(redis_url, namespace, tmp_path,
                                                     "balance", 2)), Counter())
    assert balances == expected_balances(400)


@pytest.mark.spark
def test_takeover_replaces_a_live_run_which_exits_6_and_the_state_ends_exact(
        tmp_path: Path, redis_url: str, namespace: str,
        live: list[subprocess.Popen[str]]) -> None:
    project = copy_ledger(tmp_path)
    args = spark_run_args(project, tmp_path, redis_url, namespace, "-o",
                          "ledger.readings=500", "-o", "ledger.lookup_ms=40")
    old = _start(tmp_path, [*args, "--until-done"])
    live.append(old)
    r = redis.Redis.from_url(redis_url)
    _wait_for(_committed_at_least(r, namespace, 1), old, "two batches committed")

    new = _cli(tmp_path, *args, "--until-done", "--takeover", timeout=400)
    out, err = old.communicate(timeout=60)
    assert old.returncode == 6, f"{out}\n{err}"
    reason = [line for line in err.splitlines() if line.startswith("stopped:")]
    assert len(reason) == 1 and "taken over" in reason[0] and "Traceback" not in err, err
    assert json.loads(out)["exit_code"] == 6
    summary = report(new)
    assert summary["exit_code"] == 0, new.stderr
    assert any(w.startswith("--takeover: replacing the live run") for w in summary["warnings"])
    balances = sum((t["balances"] for t in committed(redis_url, namespace, tmp_path,
                                                     "balance", 2)), Counter())
    assert balances == expected_balances(500)
