"""Spark's Python worker daemon, with the workers' common imports done once.

Spark starts ``python -m pyspark.daemon WORKER_MODULE`` once per executor and
worker module and forks one worker per concurrent task; every fork imports
what it needs after the fork. Two costs follow (``bench/README.md``,
"worker start-up"):

1. On a pip-installed pyspark, Spark puts ``python/lib/pyspark.zip`` first on
   the workers' path. The zip holds no bytecode, so each process compiles
   pyspark's sources again, and each ``importlib.invalidate_caches()`` (pyspark's
   worker calls it when it adds its files dir) re-reads the zip's directory
   once per pyspark package imported so far.
2. Each forked worker imports streamparse, redis and stormshift's hosting
   modules again.

This module is the session's ``spark.python.daemon.module`` (``session.py``
sets it for local masters, where workers run the driver's Python). It takes
the zip off ``sys.path`` when the installed pyspark is the same version (so
imports come from its ``.pyc`` files), imports ``PRELOAD`` before any fork,
then runs pyspark's own daemon unchanged. Only modules that start no thread
are preloaded: forking a process with threads is unsafe, which is why pyspark
imports the worker module after the fork; pyarrow and numpy start threads on
import and stay after the fork (``tests/test_spark_daemon.py`` checks this).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import re
import sys
import zipfile
from collections.abc import Callable, Sequence

__all__ = ["DAEMON_MODULE", "PRELOAD", "preload", "without_spark_zip"]

DAEMON_MODULE = "stormshift.engines.spark.daemon"

PRELOAD = (
    "pyspark.worker",
    "pyspark.sql.worker.create_data_source",
    "pyspark.sql.worker.lookup_data_sources",
    "msgpack",
    "redis",
    "tenacity",
    "streamparse",
    "stormshift.adapters.host",
    "stormshift.engines.spark.layout",
    "stormshift.engines.spark.taskstate",
    "stormshift.engines.spark.worker",
    "stormshift.spouts.base",
    "stormshift.state.fencing",
    "stormshift.state.scope",
    "stormshift.state.snapshots",
)
"""Imported before the fork: modules every stage or source task needs, none of
which starts a thread (no pyarrow, no numpy)."""

_VERSION = re.compile(r"""__version__\s*(?::\s*str\s*)?=\s*['"]([^'"]+)['"]""")


def version_of(source: str) -> str | None:
    """The ``__version__`` a ``pyspark/version.py`` source assigns, or None."""
    found = _VERSION.search(source)
    return found.group(1) if found else None


def _zipped_version(zip_path: str) -> str | None:
    try:
        with zipfile.ZipFile(zip_path) as z:
            return version_of(z.read("pyspark/version.py").decode("utf-8"))
    except (OSError, KeyError, zipfile.BadZipFile, UnicodeDecodeError):
        return None


def _installed_version(path: Sequence[str]) -> str | None:
    spec = importlib.machinery.PathFinder.find_spec("pyspark", list(path))
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        try:
            with open(os.path.join(location, "version.py"), encoding="utf-8") as f:
                return version_of(f.read())
        except OSError:
            continue
    return None


def without_spark_zip(
    path: Sequence[str],
    zipped: Callable[[str], str | None] = _zipped_version,
    installed: Callable[[Sequence[str]], str | None] = _installed_version,
) -> list[str]:
    """``path`` without Spark's ``pyspark.zip`` entries when the rest of ``path`` holds an
    installed pyspark of the same version; else ``path`` unchanged (a Spark distribution
    without a pip-installed pyspark, or a different version: the zip is the truth)."""
    zips = [p for p in path if os.path.basename(p) == "pyspark.zip"]
    if not zips:
        return list(path)
    rest = [p for p in path if p not in zips]
    have = installed(rest)
    if have is None or any(zipped(z) != have for z in zips):
        return list(path)
    return rest


def preload(modules: Sequence[str] = PRELOAD) -> list[str]:
    """Import ``modules``; the ones that cannot be imported are returned (the worker
    imports them after the fork as it always did, and reports a real error there)."""
    missing = []
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a worker without it fails later, with its own error
            missing.append(name)
    return missing


def thread_count() -> int:
    """Threads of this process (Linux; 1 where /proc is not there)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def main() -> None:
    sys.path[:] = without_spark_zip(sys.path)
    preload()
    if thread_count() > 1:  # pragma: no cover - a dependency started a thread on import
        print(f"stormshift daemon: {thread_count()} threads before fork after preloading "
              f"{', '.join(PRELOAD)}; set spark.python.daemon.module=pyspark.daemon if "
              "workers hang", file=sys.stderr)
    from pyspark.daemon import manager

    manager()


if __name__ == "__main__":
    main()
