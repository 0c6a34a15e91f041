"""The driver JVM's class-data archive (AppCDS) on a local master.

Why: a driver JVM spends about half of its start-up loading and verifying the same
~20,000 classes from Spark's jars at every ``stormshift run``. A dynamic CDS archive of
those classes, written once at the exit of one run, lets every later JVM map them from one
file instead (``bench/README.md``, ``jvm_class_cache.py``).

How it stays safe:
- one archive per JVM build, Spark installation and driver class path (the file name is a
  hash of them); the JVM also checks the archive itself and silently ignores one that does
  not match (``-Xshare:auto``, the default), so a stale file costs speed, never a wrong run;
- one process at a time builds it (an exclusive ``flock``); the JVM writes under a temporary
  name and the builder renames it only after the JVM exited cleanly, so a killed run never
  leaves a half-written archive under the real name;
- the JVM's CDS notices (it prints some for classes it cannot archive) are switched off:
  they would land on the run's stdout;
- left alone on a cluster master, when ``spark.driver.extraJavaOptions`` already chooses
  class sharing, when a JVM already runs in this process, or with
  ``STORMSHIFT_JVM_CLASS_CACHE=off``.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CACHE_DIR_ENV", "OFF_ENV", "ArchivePlan", "archive_for", "archive_name", "jvm_options",
           "plan_archive", "prune", "user_chose_sharing"]

OFF_ENV = "STORMSHIFT_JVM_CLASS_CACHE"
CACHE_DIR_ENV = "STORMSHIFT_CACHE_DIR"
# The JVM's own options that decide class sharing: the user's choice wins.
SHARING_OPTIONS = ("-Xshare", "SharedArchiveFile", "ArchiveClassesAtExit",
                   "AutoCreateSharedArchive", "SharedClassListFile")
# CDS notices ("Skipping ...: Signed JAR", "Pre JDK 6 class not supported by CDS") go to the
# JVM's stdout by default.
QUIET = "-Xlog:cds*=off -Xlog:class+path*=off"
# How long the exit of the building run waits for the JVM to write the archive.
DUMP_WAIT_SECS = 120.0
# An archive no run used for this long is deleted when another one is built.
UNUSED_SECS = 14 * 24 * 3600.0


@dataclass
class ArchivePlan:
    """What this run's driver JVM does with the archive: map it (``building`` False) or
    write it at exit (``building`` True, under ``temporary``, while holding ``lock_fd``)."""

    archive: Path
    building: bool
    temporary: Path | None = None
    lock_fd: int | None = None

    def options(self) -> str:
        return jvm_options(self.archive, self.temporary if self.building else None)

    def finish_at_exit(self, session: Any) -> None:
        """When this process exits, let the building JVM write its archive and put it in
        place (a run that only maps the archive has nothing to do)."""
        if self.building:
            atexit.register(self._finish, session)

    def _finish(self, session: Any) -> None:
        proc = getattr(session.sparkContext._gateway, "proc", None)
        try:
            if proc is None or self.temporary is None:
                return
            with contextlib.suppress(Exception):
                session.stop()
            with contextlib.suppress(OSError):
                proc.stdin.close()  # the gateway JVM exits at the end of its stdin
            try:
                code = proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:  # writing the archive (a JVM without one exits)
                print(f"stormshift: saving the driver JVM's classes for faster starts (once, "
                      f"~10 s): {self.archive}", file=sys.stderr, flush=True)
                try:
                    code = proc.wait(timeout=DUMP_WAIT_SECS)
                except Exception:  # noqa: BLE001 - never hang or fail a finished run on this
                    return
            if code == 0 and self.temporary.exists() and self.temporary.stat().st_size:
                os.replace(self.temporary, self.archive)
        finally:
            if self.temporary is not None:
                with contextlib.suppress(OSError):
                    self.temporary.unlink()
            if self.lock_fd is not None:
                os.close(self.lock_fd)  # releases the flock


def jvm_options(archive: Path, write_to: Path | None) -> str:
    """The driver JVM options that map ``archive``, or write a new one to ``write_to``."""
    if write_to is not None:
        return f"-XX:ArchiveClassesAtExit={write_to} {QUIET}"
    return f"-XX:SharedArchiveFile={archive} {QUIET}"


def user_chose_sharing(java_options: str) -> bool:
    return any(option in java_options for option in SHARING_OPTIONS)


def archive_name(java: str, java_stamp: str, spark_home: str, jars_stamp: str,
                 class_path: str) -> str:
    """The archive's file name: a hash of what the JVM checks the archive against."""
    parts = (java, java_stamp, spark_home, jars_stamp, class_path)
    digest = hashlib.sha256(repr(parts).encode()).hexdigest()
    return f"driver-{digest[:20]}.jsa"


def plan_archive(master: str, conf: Mapping[str, str]) -> ArchivePlan | None:
    """The archive plan of a driver JVM about to start for ``master``, or None (no archive:
    see the module docstring for when)."""
    if not (master == "local" or master.startswith("local[")) or os.name != "posix":
        return None
    if os.environ.get(OFF_ENV, "").lower() in ("0", "off", "false", "no"):
        return None
    if user_chose_sharing(conf.get("spark.driver.extraJavaOptions", "")):
        return None
    from pyspark import SparkContext

    if SparkContext._gateway is not None:  # getOrCreate reuses the running JVM
        return None
    archive = archive_for(conf)
    if archive is None:
        return None
    try:
        archive.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    if archive.exists():
        with contextlib.suppress(OSError):
            os.utime(archive)  # its mtime says when it was last used (``prune``)
        return ArchivePlan(archive, building=False)
    return _claim_building(archive)


def prune(directory: Path, keep: Path, now: float, max_idle_secs: float = UNUSED_SECS) -> list[Path]:
    """Delete the archives in ``directory`` (other than ``keep``) no run used for
    ``max_idle_secs``: each pip install of pyspark or JDK update makes a new one."""
    gone = []
    for path in sorted(directory.glob("driver-*.jsa")):
        try:
            if path != keep and now - path.stat().st_mtime > max_idle_secs:
                path.unlink()
                Path(f"{path}.lock").unlink(missing_ok=True)
                gone.append(path)
        except OSError:
            continue
    return gone


def archive_for(conf: Mapping[str, str]) -> Path | None:
    """Where the archive of a local driver JVM started with ``conf`` is (or would be)."""
    name = _archive_name(conf)
    return None if name is None else _cache_dir() / name


def _claim_building(archive: Path) -> ArchivePlan | None:
    """The building plan if no other process builds this archive now, else None."""
    import fcntl

    try:
        fd = os.open(f"{archive}.lock", os.O_CREAT | os.O_RDWR, 0o644)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    if archive.exists():  # another process finished it while we looked
        os.close(fd)
        return ArchivePlan(archive, building=False)
    for stale in archive.parent.glob(f"{archive.name}.*.tmp"):  # left by killed builders
        with contextlib.suppress(OSError):
            stale.unlink()
    prune(archive.parent, archive, time.time())
    temporary = archive.with_name(f"{archive.name}.{os.getpid()}.tmp")
    return ArchivePlan(archive, building=True, temporary=temporary, lock_fd=fd)


def _archive_name(conf: Mapping[str, str]) -> str | None:
    """The archive name for the JVM ``spark-submit`` would start (``JAVA_HOME``, else the
    ``java`` on ``PATH``, as ``spark-class`` chooses), or None when there is none."""
    from pyspark.find_spark_home import _find_spark_home

    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java or not os.path.exists(java):
        return None
    java = os.path.realpath(java)
    spark_home = os.path.realpath(_find_spark_home())
    jars = Path(spark_home, "jars")
    try:
        java_stat, jars_stat = os.stat(java), os.stat(jars)
    except OSError:
        return None
    return archive_name(java, f"{java_stat.st_size}:{java_stat.st_mtime_ns}", spark_home,
                        str(jars_stat.st_mtime_ns), conf.get("spark.driver.extraClassPath", ""))


def _cache_dir() -> Path:
    if os.environ.get(CACHE_DIR_ENV):
        return Path(os.environ[CACHE_DIR_ENV], "jvm")
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("stormshift"), "jvm")
