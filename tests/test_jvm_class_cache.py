"""The driver JVM's class-data archive (``engines/spark/runtime/classcache.py``): who builds
it, who maps it, when it is left alone, and a real JVM writing then mapping it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from stormshift.engines.spark.runtime import classcache
from stormshift.engines.spark.runtime.classcache import (
    CACHE_DIR_ENV,
    OFF_ENV,
    QUIET,
    plan_archive,
    prune,
    user_chose_sharing,
)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from pyspark import SparkContext

    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path))
    monkeypatch.delenv(OFF_ENV, raising=False)
    # a JVM this worker started for other tests would make every plan "reuse that JVM"
    monkeypatch.setattr(SparkContext, "_gateway", None)
    return tmp_path / "jvm"


def _release(plan: classcache.ArchivePlan | None) -> None:
    if plan is not None and plan.lock_fd is not None:
        os.close(plan.lock_fd)


def test_left_alone_on_a_cluster_when_switched_off_or_when_the_user_chose_sharing(
        cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert plan_archive("spark://127.0.0.1:7077", {}) is None
    assert plan_archive("yarn", {}) is None
    for option in ("-Xshare:off", "-XX:SharedArchiveFile=/x.jsa", "-XX:ArchiveClassesAtExit=/y"):
        assert user_chose_sharing(f"-Xmx2g {option}")
        assert plan_archive("local[2]", {"spark.driver.extraJavaOptions": option}) is None
    assert not user_chose_sharing("-Xmx2g -XX:TieredStopAtLevel=1")
    monkeypatch.setenv(OFF_ENV, "off")
    assert plan_archive("local[2]", {}) is None
    assert not cache_dir.exists()


def test_the_first_run_builds_under_a_temporary_name_and_a_second_at_the_same_time_does_not(
        cache_dir: Path) -> None:
    first = plan_archive("local[2]", {})
    try:
        assert first is not None and first.building
        assert first.temporary is not None
        assert first.temporary.parent == first.archive.parent == cache_dir
        assert first.temporary.name == f"{first.archive.name}.{os.getpid()}.tmp"
        assert first.options() == f"-XX:ArchiveClassesAtExit={first.temporary} {QUIET}"
        # another run while the first builds: the lock is taken, it starts without any archive
        assert plan_archive("local[1]", {}) is None
    finally:
        _release(first)


def test_an_existing_archive_is_mapped_and_marked_used(cache_dir: Path) -> None:
    plan = plan_archive("local[2]", {})
    assert plan is not None and plan.building
    _release(plan)
    plan.archive.write_bytes(b"archive")
    os.utime(plan.archive, (1_000_000, 1_000_000))
    mapped = plan_archive("local", {})
    assert mapped is not None and not mapped.building and mapped.lock_fd is None
    assert mapped.archive == plan.archive
    assert mapped.options() == f"-XX:SharedArchiveFile={plan.archive} {QUIET}"
    assert plan.archive.stat().st_mtime > time.time() - 60


def test_a_different_driver_class_path_is_another_archive(cache_dir: Path) -> None:
    plain = plan_archive("local[2]", {})
    _release(plain)
    other = plan_archive("local[2]", {"spark.driver.extraClassPath": "/opt/extra.jar"})
    _release(other)
    assert plain is not None and other is not None
    assert plain.archive != other.archive


def test_a_builder_deletes_what_killed_builders_left_and_archives_unused_for_two_weeks(
        cache_dir: Path) -> None:
    probe = plan_archive("local[2]", {})
    _release(probe)
    assert probe is not None
    stale_tmp = cache_dir / f"{probe.archive.name}.99999.tmp"
    stale_tmp.write_bytes(b"half")
    old, recent = cache_dir / "driver-old.jsa", cache_dir / "driver-recent.jsa"
    for path in (old, recent):
        path.write_bytes(b"x")
    (cache_dir / "driver-old.jsa.lock").write_bytes(b"")
    os.utime(old, (time.time() - 15 * 24 * 3600,) * 2)
    plan = plan_archive("local[2]", {})
    _release(plan)
    assert not stale_tmp.exists()
    assert not old.exists() and not (cache_dir / "driver-old.jsa.lock").exists()
    assert recent.exists()
    assert prune(cache_dir, recent, time.time() + 30 * 24 * 3600) == []  # ``keep`` stays


def _stand_in_jvm(temporary: Path, code: int) -> subprocess.Popen[bytes]:
    """A process that, like the gateway JVM, writes the archive once its stdin ends."""
    script = (f"import sys; sys.stdin.read(); open({str(temporary)!r}, 'wb').write(b'jsa'); "
              f"sys.exit({code})")
    return subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE)


def _session_of(proc: subprocess.Popen[bytes]) -> SimpleNamespace:
    stopped: list[bool] = []
    context = SimpleNamespace(_gateway=SimpleNamespace(proc=proc))
    return SimpleNamespace(sparkContext=context, stop=lambda: stopped.append(True), stopped=stopped)


@pytest.mark.parametrize("code", [0, 1])
def test_the_archive_takes_its_name_only_after_the_jvm_exited_cleanly(
        cache_dir: Path, code: int) -> None:
    plan = plan_archive("local[2]", {})
    assert plan is not None and plan.temporary is not None
    session = _session_of(_stand_in_jvm(plan.temporary, code))
    plan._finish(session)
    assert session.stopped == [True]
    assert plan.archive.exists() is (code == 0)
    assert not plan.temporary.exists()
    again = plan_archive("local[2]", {})  # the lock was released
    _release(again)
    assert again is not None and again.building is (code != 0)


@pytest.mark.spark
def test_a_real_driver_jvm_writes_the_archive_at_exit_and_the_next_one_maps_it(
        tmp_path: Path) -> None:
    env = {**os.environ, CACHE_DIR_ENV: str(tmp_path / "cache"), "PYTHONPATH": str(REPO)}
    env.pop(OFF_ENV, None)
    run = subprocess.run(
        [sys.executable, "-m", "stormshift", "run", str(REPO / "examples" / "wordcount"),
         "--max-tuples", "20", "--checkpoint", str(tmp_path / "ck")],
        check=False, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "[warning]" not in run.stdout and "cds" not in run.stdout.lower()
    assert "saving the driver JVM's classes for faster starts" in run.stderr
    archives = sorted((tmp_path / "cache" / "jvm").glob("driver-*"))
    names = [path.name for path in archives]
    assert len(names) == 2 and names[0].endswith(".jsa") and names[1].endswith(".jsa.lock"), names
    assert archives[0].stat().st_size > 1_000_000
    probe = ("from stormshift.engines.spark.runtime.session import build_session\n"
             "session = build_session('local[1]', app_name='cds-probe')\n"
             "pid = session.sparkContext._gateway.proc.pid\n"
             "print(open(f'/proc/{pid}/maps').read())\n")
    mapped = subprocess.run([sys.executable, "-c", probe], check=False, env=env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
    assert mapped.returncode == 0, mapped.stderr[-3000:]
    assert str(archives[0]) in mapped.stdout
