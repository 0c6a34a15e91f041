"""Building the driver JVM's class-data archive once, before the workers start.

Without it, on a fresh machine the first Spark runs of both workers start without an archive
and one of them, whichever test it belongs to, spends ~10 s at exit writing it
(``stormshift/engines/spark/runtime/classcache.py``). Built here first, every later Spark run
of the suite maps it and each test's own run stays as long as on any other day."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from stormshift.engines.spark.runtime.classcache import archive_for, plan_archive

REPO = Path(__file__).resolve().parents[2]


def build_driver_archive(write: Callable[[str], None]) -> None:
    """Run a 20-tuple wordcount on Spark when this machine has no archive yet; a failure
    only costs the suite its speed-up (the tests themselves will report a broken Spark)."""
    archive = archive_for({})
    if archive is None or archive.exists():
        return
    plan = plan_archive("local[2]", {})  # None: switched off, or another process builds it
    if plan is None or not plan.building:
        return
    if plan.lock_fd is not None:
        os.close(plan.lock_fd)  # the run below takes the lock itself
    write(f"building the driver JVM's class archive once ({archive}) ...")
    with tempfile.TemporaryDirectory(prefix="stormshift-jvm-archive-") as folder:
        subprocess.run(
            [sys.executable, "-m", "stormshift", "run", str(REPO / "examples" / "wordcount"),
             "--max-tuples", "20", "--checkpoint", str(Path(folder, "checkpoint"))],
            cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600,
            check=False)
    write(f"driver JVM class archive: {'built' if archive.exists() else 'not built'}")
