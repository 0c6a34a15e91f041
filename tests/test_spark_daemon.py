"""The worker daemon (``stormshift/engines/spark/runtime/daemon.py``): pyspark from bytecode, preloads
that start no thread, and Spark's workers really running under it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
import zipimport
from pathlib import Path
from typing import Any

import pyspark
import pytest

from stormshift.engines.spark.runtime.daemon import (
    AFTER_FORK,
    DAEMON_MODULE,
    THREAD_FREE_ENV,
    forget_archive_importers,
    holds_modules,
    version_of,
    without_moduleless_archives,
    without_spark_zip,
)
from stormshift.engines.spark.runtime.session import worker_conf

SPARK_LIB = Path(pyspark.__file__).parent / "python" / "lib"


def test_version_of_reads_annotated_and_plain_assignments() -> None:
    assert version_of("__version__: str = '4.3.0'\n") == "4.3.0"
    assert version_of('__version__ = "3.5.1"') == "3.5.1"
    assert version_of("VERSION = 1") is None


def test_zip_leaves_the_path_only_for_the_same_installed_version() -> None:
    path = ["/spark/python/lib/pyspark.zip", "/spark/python/lib/py4j-src.zip", "/site-packages"]
    same = without_spark_zip(path, zipped=lambda z: "4.3.0", installed=lambda p: "4.3.0")
    assert same == ["/spark/python/lib/py4j-src.zip", "/site-packages"]
    other = without_spark_zip(path, zipped=lambda z: "4.3.0", installed=lambda p: "4.2.0")
    assert other == path
    none = without_spark_zip(path, zipped=lambda z: "4.3.0", installed=lambda p: None)
    assert none == path
    unreadable = without_spark_zip(path, zipped=lambda z: None, installed=lambda p: "4.3.0")
    assert unreadable == path
    assert without_spark_zip(["/a", "/b"]) == ["/a", "/b"]


def test_archives_without_python_modules_leave_the_path(tmp_path: Path) -> None:
    """Spark's spark-core jar sits on the workers' path for distributions that ship pyspark
    inside it; a jar or zip without a module gives imports nothing but costs every task."""
    jar, zipped, broken = tmp_path / "core.jar", tmp_path / "lib.zip", tmp_path / "broken.zip"
    with zipfile.ZipFile(jar, "w") as z:
        z.writestr("org/apache/Spark.class", b"\xca\xfe")
    with zipfile.ZipFile(zipped, "w") as z:
        z.writestr("pkg/__init__.py", "")
    broken.write_bytes(b"not a zip")
    assert not holds_modules(str(jar)) and holds_modules(str(zipped))
    assert holds_modules(str(broken)), "unreadable: kept, the import system reports it"
    path = [str(tmp_path), str(jar), str(zipped), str(broken), "/no/such.zip", "/site-packages"]
    assert without_moduleless_archives(path) == [
        str(tmp_path), str(zipped), str(broken), "/no/such.zip", "/site-packages"]


def test_importers_of_archives_off_the_path_are_forgotten(tmp_path: Path) -> None:
    """``importlib.invalidate_caches()`` (pyspark's worker calls it per task) re-reads the
    directory of every zip importer in the cache, on the path or not."""
    kept, gone = tmp_path / "kept.zip", tmp_path / "gone.jar"
    for archive in (kept, gone):
        with zipfile.ZipFile(archive, "w") as z:
            z.writestr("pkg/__init__.py", "")
    cache: dict[str, object] = {
        str(kept): zipimport.zipimporter(str(kept)),
        str(gone): zipimport.zipimporter(str(gone)),
        f"{gone}/pkg": zipimport.zipimporter(f"{gone}/pkg"),
        str(tmp_path): None,
    }
    dropped = forget_archive_importers([str(kept), str(tmp_path)], cache)
    assert sorted(dropped) == sorted([str(gone), f"{gone}/pkg"])
    assert list(cache) == [str(kept), str(tmp_path)]


@pytest.mark.parametrize("user_env, early", [({}, True), ({"OPENBLAS_NUM_THREADS": "4"}, False)],
                         ids=["thread-free", "user-wants-blas-threads"])
def test_daemon_setup_in_a_worker_like_process_uses_bytecode_and_starts_no_thread(
        user_env: dict[str, str], early: bool) -> None:
    """What Spark's worker daemon gets: the zips first on PYTHONPATH (as Spark sets it).
    pyarrow and pandas are imported before the fork only where no thread can follow."""
    zips = [str(SPARK_LIB / "pyspark.zip"), *map(str, sorted(SPARK_LIB.glob("py4j-*.zip")))]
    assert Path(zips[0]).is_file()
    env = {k: v for k, v in os.environ.items() if k not in THREAD_FREE_ENV}
    env.update(user_env, PYTHONPATH=os.pathsep.join([*zips, os.environ.get("PYTHONPATH", "")]))
    code = (
        "import json, os, sys\n"
        "from stormshift.engines.spark.runtime.daemon import AFTER_FORK, PRELOAD, prepare, thread_count\n"
        "early = prepare(os.environ)\n"
        "import pyspark\n"
        "print(json.dumps({'early': early, 'threads': thread_count(),\n"
        "                  'missing': [m for m in PRELOAD if m not in sys.modules],\n"
        "                  'after_fork': [m for m in AFTER_FORK if m in sys.modules],\n"
        "                  'pyspark': pyspark.__file__, 'zip_on_path': any(\n"
        "                      p.endswith('pyspark.zip') for p in sys.path),\n"
        "                  'numpy': 'numpy' in sys.modules}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True, timeout=120)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["missing"] == []
    assert got["threads"] == 1, "a preloaded module started a thread: unsafe to fork"
    assert got["early"] is early
    if early:
        assert got["after_fork"] == list(AFTER_FORK) and got["numpy"]
    else:
        assert not {"pyarrow", "pandas"} & set(got["after_fork"]) and not got["numpy"]
    assert not got["zip_on_path"]
    assert "pyspark.zip" not in got["pyspark"]
    assert Path(got["pyspark"]).resolve() == Path(pyspark.__file__).resolve()


def test_a_fork_freezes_its_modules_before_its_first_task_and_never_a_tasks_objects() -> None:
    """In a fresh process (a freeze is for the process's life): the first task call imports
    ``AFTER_FORK`` and freezes; a task's own garbage stays collectable; no second freeze."""
    code = (
        "import gc, json, sys\n"
        "from stormshift.engines.spark.runtime.daemon import AFTER_FORK, first_task_freezes\n"
        "calls = []\n"
        "def task(sock, authenticated):\n"
        "    calls.append(sock)\n"
        "    cycle = {'name': sock}\n"
        "    cycle['self'] = cycle\n"
        "    return 0\n"
        "run = first_task_freezes(task)\n"
        "before = gc.get_freeze_count()\n"
        "run(1, True)\n"
        "first = gc.get_freeze_count()\n"
        "freed = gc.collect()\n"
        "run(2, True)\n"
        "print(json.dumps({'before': before, 'first': first, 'second': gc.get_freeze_count(),\n"
        "                  'freed': freed, 'calls': calls,\n"
        "                  'imported': [m for m in AFTER_FORK if m in sys.modules]}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=120)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    from stormshift.engines.spark.runtime.daemon import AFTER_FORK

    assert got["before"] == 0 and got["first"] > 20_000  # pyarrow and pandas alone are more
    assert got["second"] == got["first"]
    assert got["freed"] >= 1  # the first task's cycle: not frozen
    assert got["calls"] == [1, 2]
    assert got["imported"] == list(AFTER_FORK)


def test_local_masters_get_the_daemon_clusters_do_not() -> None:
    assert worker_conf("local[*]") == {"spark.python.daemon.module": DAEMON_MODULE}
    assert worker_conf("local") == {"spark.python.daemon.module": DAEMON_MODULE}
    assert worker_conf("spark://host:7077") == {}
    assert worker_conf("yarn") == {}


def test_spark_workers_run_under_the_daemon(spark: Any) -> None:
    def probe(batches: Any) -> Any:
        import gc
        import sys

        import pyarrow as pa
        import pyspark as ps

        for _ in batches:
            pass
        import zipimport

        yield pa.RecordBatch.from_pydict({
            "pyspark": [ps.__file__],
            "archives": [sorted(f.archive for f in sys.path_importer_cache.values()
                                if isinstance(f, zipimport.zipimporter))],
            "preloaded": ["stormshift.adapters.host" in sys.modules],
            "frozen": [gc.get_freeze_count()],
            "daemon": [sys.modules["__main__"].__spec__.name
                       if sys.modules["__main__"].__spec__ else ""],
        })

    assert spark.sparkContext.getConf().get("spark.python.daemon.module") == DAEMON_MODULE
    rows = spark.range(2).repartition(2).mapInArrow(
        probe, "pyspark string, archives array<string>, preloaded boolean, frozen long, "
               "daemon string").collect()
    assert rows
    for row in rows:
        assert "pyspark.zip" not in row.pyspark
        # no importer re-reads pyspark.zip or the spark-core jar at each task's start
        assert not [a for a in row.archives if a.endswith((".jar", "pyspark.zip"))]
        assert row.preloaded
        assert row.frozen > 20_000  # the modules, frozen before the first task
        assert row.daemon == DAEMON_MODULE
