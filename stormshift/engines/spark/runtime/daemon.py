"""Spark's Python worker daemon, with the workers' common imports done once.

Spark starts ``python -m pyspark.daemon WORKER_MODULE`` once per executor and
worker module and forks one worker per concurrent task; every fork imports
what it needs after the fork. Three costs follow (``bench/history.md``,
"worker start-up"):

1. On a pip-installed pyspark, Spark puts ``python/lib/pyspark.zip`` first on
   the workers' path, and the spark-core jar (6,000 entries, not one Python
   module) after it. The zip holds no bytecode, so each process compiles
   pyspark's sources again, and pyspark's worker calls
   ``importlib.invalidate_caches()`` at the start of every task, which re-reads
   the directory of every archive the import system has seen (zip and jar:
   ~0.1 s of CPU per task here).
2. Each forked worker imports streamparse, redis, pyarrow, pandas and
   stormshift's hosting modules again (~1 s of CPU per worker here).
3. After every task a reused worker runs a full ``gc.collect()``, which walks
   every object the process holds: the imported modules (pyspark, pyarrow,
   pandas: ~100,000 objects, ~40 ms per walk here) as much as the task's leftovers.

This module is the session's ``spark.python.daemon.module`` (``session.py``
sets it for local masters, where workers run the driver's Python). On a local
master ``launcher.py`` usually keeps the archives off ``PYTHONPATH`` already;
where it does not (a cluster, the user's own ``PYSPARK_PYTHON``) the daemon takes
the zip off ``sys.path`` when the installed pyspark is the same version (so
imports come from its ``.pyc`` files), and archives that hold no Python module
(the jar) too, and forgets the importers of archives no longer on the path.
It imports ``PRELOAD`` before any fork, freezes them (``gc.freeze``: the collector never walks them again, and pages
shared with the forks stay shared), then runs pyspark's own daemon.

Forking a process that has threads is unsafe (which is why pyspark imports the
worker module after the fork), and two of those imports start one: pyarrow's
bundled jemalloc its background thread (Arrow allocates with mimalloc; the thread
is idle) and numpy's OpenBLAS its pool. ``THREAD_FREE_ENV`` turns both off (unless
the user set the variables otherwise; Spark runs one task per worker and core,
so one BLAS thread is what a worker should use anyway); then ``AFTER_FORK`` is
imported before the fork too, and only if the process still has one thread
(``tests/test_spark_daemon.py`` checks it). Otherwise each fork imports
``AFTER_FORK`` before its first task and freezes it there. What a task leaves
behind (state caches, spout hosts) is never frozen: the per-task collection
still frees it.
"""

from __future__ import annotations

import gc
import importlib
import importlib.machinery
import os
import re
import sys
import zipfile
import zipimport
from collections.abc import Callable, MutableMapping, Sequence
from typing import Any

__all__ = [
    "AFTER_FORK",
    "DAEMON_MODULE",
    "PRELOAD",
    "THREAD_FREE_ENV",
    "first_task_freezes",
    "forget_archive_importers",
    "preload",
    "prepare",
    "thread_free_env",
    "without_moduleless_archives",
    "without_spark_zip",
]

DAEMON_MODULE = "stormshift.engines.spark.runtime.daemon"

PRELOAD = (
    "pyspark.worker",
    "pyspark.sql.worker.create_data_source",
    "pyspark.sql.worker.lookup_data_sources",
    "msgpack",
    "redis",
    "tenacity",
    "streamparse",
    "stormshift.adapters.host",
    "stormshift.engines.spark.protocol.layout",
    "stormshift.engines.spark.task.taskstate",
    "stormshift.engines.spark.runtime.worker",
    "stormshift.spouts.base",
    "stormshift.state.fencing",
    "stormshift.state.scope",
    "stormshift.state.snapshots",
)
"""Imported before the fork: modules every stage or source task needs, none of
which starts a thread (no pyarrow, no numpy)."""

AFTER_FORK = (
    "pyarrow",
    "pandas",
    "pyspark.sql.pandas.serializers",
    "stormshift.engines.spark.task.stage",
    "stormshift.engines.spark.source.source",
    "stormshift.engines.spark.protocol.spoutrange",
    "stormshift.engines.spark.task.headinput",
)
"""Imported before the fork where ``THREAD_FREE_ENV`` holds, else by each fork before its
first task (pyspark's worker would import them during it); frozen either way."""

THREAD_FREE_ENV = {
    "JE_ARROW_MALLOC_CONF": "background_thread:false",
    "OPENBLAS_NUM_THREADS": "1",
}
"""Settings under which importing ``AFTER_FORK`` starts no thread."""

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


_MODULE_SUFFIXES = (".py", ".pyc", ".so", ".pyd")


def holds_modules(archive: str) -> bool:
    """Whether a zip/jar on ``sys.path`` could give an import anything. Unreadable: assume so."""
    try:
        with zipfile.ZipFile(archive) as z:
            return any(name.endswith(_MODULE_SUFFIXES) for name in z.namelist())
    except (OSError, zipfile.BadZipFile):
        return True


def without_moduleless_archives(
    path: Sequence[str], holds: Callable[[str], bool] = holds_modules,
) -> list[str]:
    """``path`` without the archive files (not directories) that hold no Python module:
    Spark adds its spark-core jar for distributions that ship pyspark inside it."""
    return [p for p in path if not (p.endswith((".jar", ".zip")) and os.path.isfile(p))
            or holds(p)]


def forget_archive_importers(path: Sequence[str], cache: MutableMapping[str, Any]) -> list[str]:
    """Drop from ``sys.path_importer_cache`` the zip importers of archives not on ``path``
    (``invalidate_caches`` re-reads each one's directory); returns the keys dropped."""
    on_path = set(path)
    stale = [key for key, finder in cache.items()
             if isinstance(finder, zipimport.zipimporter) and finder.archive not in on_path]
    for key in stale:
        del cache[key]
    return stale


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


def freeze_modules() -> None:
    """Collect, then move every object that survives to the collector's permanent
    generation. Called only where the heap holds modules and nothing of a task."""
    gc.collect()
    gc.freeze()


def first_task_freezes(worker: Callable[..., int]) -> Callable[..., int]:
    """pyspark's per-fork ``worker`` function, importing and freezing ``AFTER_FORK``
    before the fork's first task (the flag lives in each forked process)."""
    ready = False

    def run(*args: object) -> int:
        nonlocal ready
        if not ready:
            ready = True
            preload(AFTER_FORK)
            freeze_modules()
        return worker(*args)

    return run


def thread_free_env(environ: dict[str, str] | os._Environ[str]) -> bool:
    """Set ``THREAD_FREE_ENV``'s variables the user left unset; True when all hold."""
    for name, value in THREAD_FREE_ENV.items():
        environ.setdefault(name, value)
    return all(environ[name] == value for name, value in THREAD_FREE_ENV.items())


def thread_count() -> int:
    """Threads of this process (Linux; 1 where /proc is not there)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def prepare(environ: dict[str, str] | os._Environ[str]) -> bool:
    """Everything before the first fork but the freeze; True when ``AFTER_FORK`` was
    imported here too (the environment keeps it thread-free)."""
    sys.path[:] = without_moduleless_archives(without_spark_zip(sys.path))
    forget_archive_importers(sys.path, sys.path_importer_cache)
    preload()
    early = thread_count() == 1 and thread_free_env(environ)
    if early:
        preload(AFTER_FORK)
    return early


def main() -> None:
    # the workers' spout hosts live as long as this daemon (runtime/hosts.py: OWNER_ENV)
    os.environ["STORMSHIFT_SPOUT_OWNER"] = str(os.getpid())
    prepare(os.environ)
    if thread_count() > 1:  # pragma: no cover - a dependency started a thread on import
        print(f"stormshift daemon: {thread_count()} threads before fork after preloading "
              f"{', '.join(PRELOAD)}; set spark.python.daemon.module=pyspark.daemon if "
              "workers hang", file=sys.stderr)
    freeze_modules()
    import pyspark.daemon

    pyspark.daemon.worker = first_task_freezes(pyspark.daemon.worker)
    pyspark.daemon.manager()


if __name__ == "__main__":
    main()
