"""The driver JVM's options (``stormshift/engines/spark/runtime/session.py``): our log4j2
file unless the user's ``spark.driver.extraJavaOptions`` names one, the client compiler
only on a local master unless the user chose the JIT tiers, the serial collector only on a
local master with the default heap unless the user chose a collector, and never in place of
the user's other JVM options."""

from __future__ import annotations

import subprocess
import sys

import pytest

from stormshift.engines.spark.runtime.session import (
    LOCAL_GC_OPTIONS,
    LOCAL_MALLOC_ENV,
    LOG4J2_FILE,
    RUNTIME_SIZES,
    driver_gc_conf,
    driver_jit_conf,
    driver_log_conf,
    driver_malloc_env,
    malloc_arenas,
    runtime_sizes,
)


def test_the_driver_gets_our_log4j2_file_beside_the_users_jvm_options() -> None:
    ours = f"-Dlog4j2.configurationFile=file:{LOG4J2_FILE}"
    assert driver_log_conf({}) == {"spark.driver.extraJavaOptions": ours}
    assert driver_log_conf({"spark.driver.extraJavaOptions": "-Xss4m"}) == {
        "spark.driver.extraJavaOptions": f"-Xss4m {ours}"}
    own = {"spark.driver.extraJavaOptions": "-Dlog4j2.configurationFile=/etc/mine.properties"}
    assert driver_log_conf(own) == {}


def test_a_local_driver_gets_the_client_compiler_beside_the_users_jvm_options() -> None:
    key = "spark.driver.extraJavaOptions"
    assert driver_jit_conf("local[2]", {}) == {key: "-XX:TieredStopAtLevel=1"}
    assert driver_jit_conf("local", {key: "-Xss4m"}) == {key: "-Xss4m -XX:TieredStopAtLevel=1"}
    assert driver_jit_conf("local[2]", {key: "-XX:TieredStopAtLevel=4"}) == {}
    assert driver_jit_conf("local[2]", {key: "-XX:-TieredCompilation"}) == {}
    assert driver_jit_conf("spark://127.0.0.1:7077", {}) == {}


def test_a_local_driver_with_the_default_heap_gets_the_serial_collector(monkeypatch) -> None:
    monkeypatch.delenv("SPARK_DRIVER_MEMORY", raising=False)
    key = "spark.driver.extraJavaOptions"
    ours = "-XX:+UseSerialGC -Xms256m"
    assert LOCAL_GC_OPTIONS == ours
    assert driver_gc_conf("local[2]", {}) == {key: ours}
    assert driver_gc_conf("local", {key: "-XX:TieredStopAtLevel=1"}) == {
        key: f"-XX:TieredStopAtLevel=1 {ours}"}
    assert driver_gc_conf("local[2]", {key: "-Xlog:gc:file=/tmp/gc.log -Xss4m"}) == {
        key: f"-Xlog:gc:file=/tmp/gc.log -Xss4m {ours}"}


def test_the_users_collector_or_heap_sizes_keep_the_jvms_collector(monkeypatch) -> None:
    monkeypatch.delenv("SPARK_DRIVER_MEMORY", raising=False)
    key = "spark.driver.extraJavaOptions"
    for own in ("-XX:+UseG1GC", "-XX:+UseZGC", "-XX:+UseParallelGC", "-XX:-UseSerialGC",
                "-XX:G1HeapRegionSize=4m", "-XX:G1PeriodicGCInterval=1000", "-Xms512m", "-Xmn64m",
                "-XX:InitialHeapSize=300m", "-XX:MaxNewSize=128m"):
        assert driver_gc_conf("local[2]", {key: f"-Xss4m {own}"}) == {}, own
    assert driver_gc_conf("local[2]", {"spark.driver.memory": "4g"}) == {}
    assert driver_gc_conf("spark://127.0.0.1:7077", {}) == {}
    monkeypatch.setenv("SPARK_DRIVER_MEMORY", "8g")
    assert driver_gc_conf("local[2]", {}) == {}


def test_a_local_driver_jvm_starts_with_two_malloc_arenas_unless_the_user_chose() -> None:
    assert LOCAL_MALLOC_ENV == {"MALLOC_ARENA_MAX": "2"}
    assert driver_malloc_env("local[2]", {}) == {"MALLOC_ARENA_MAX": "2"}
    assert driver_malloc_env("local", {"GLIBC_TUNABLES": "glibc.malloc.tcache_count=0"}) == {
        "MALLOC_ARENA_MAX": "2"}
    assert driver_malloc_env("local[2]", {"MALLOC_ARENA_MAX": "8"}) == {}
    assert driver_malloc_env("local[2]", {"GLIBC_TUNABLES": "glibc.malloc.arena_max=4"}) == {}
    assert driver_malloc_env("spark://127.0.0.1:7077", {}) == {}
    environ = {"PATH": "/usr/bin"}
    with malloc_arenas("local[2]", environ):
        assert environ == {"PATH": "/usr/bin", "MALLOC_ARENA_MAX": "2"}
    assert environ == {"PATH": "/usr/bin"}  # only while the JVM starts
    environ = {"MALLOC_ARENA_MAX": "8"}
    with malloc_arenas("local[2]", environ):
        assert environ == {"MALLOC_ARENA_MAX": "8"}
    assert environ == {"MALLOC_ARENA_MAX": "8"}  # the user's, kept


def test_arrow_batches_to_python_are_bounded_in_bytes_unless_the_user_chose() -> None:
    key = "spark.sql.execution.arrow.maxBytesPerBatch"
    assert RUNTIME_SIZES == {key: str(4 << 20)}
    assert runtime_sizes(lambda k: False) == {key: "4194304"}
    assert runtime_sizes(lambda k: k == key) == {}
    assert runtime_sizes(lambda k: k == "spark.sql.execution.arrow.maxRecordsPerBatch") == {key: "4194304"}


@pytest.mark.spark
def test_the_driver_jvm_gets_the_arenas_and_its_python_workers_inherit_them(tmp_path) -> None:
    """A real local session: the variable reaches the driver JVM's environment and the
    workers it starts, and leaves the driver's own; the Arrow byte bound is set, and a size
    the user set on the session is kept when the engine configures it again."""
    code = (
        "import os\n"
        "os.environ.pop('MALLOC_ARENA_MAX', None)\n"
        "from stormshift.engines.spark.runtime.session import build_session\n"
        "s = build_session('local[1]', shuffle_partitions=1, conf={'spark.ui.enabled': 'false'})\n"
        "jvm = s.sparkContext._jvm.java.lang.System.getenv('MALLOC_ARENA_MAX')\n"
        "print('BYTES', s.conf.get('spark.sql.execution.arrow.maxBytesPerBatch'))\n"
        "from stormshift.engines.spark.runtime.session import configure_session\n"
        "s.conf.set('spark.sql.execution.arrow.maxBytesPerBatch', '1048576')\n"
        "configure_session(s)\n"
        "print('MINE', s.conf.get('spark.sql.execution.arrow.maxBytesPerBatch'))\n"
        "rdd = s.sparkContext.parallelize([0], 1)\n"
        "worker = rdd.map(lambda _: __import__('os').environ.get('MALLOC_ARENA_MAX')).collect()[0]\n"
        "print('JVM', jvm, 'WORKER', worker, 'DRIVER', os.environ.get('MALLOC_ARENA_MAX'))\n"
        "s.stop()\n")
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True,
                         timeout=240, cwd=tmp_path)
    assert "JVM 2 WORKER 2 DRIVER None" in out.stdout, out.stderr[-2000:]
    assert "BYTES 4194304" in out.stdout and "MINE 1048576" in out.stdout  # a user's size kept


def test_the_log4j2_file_ships_with_the_package_and_keeps_warnings() -> None:
    text = LOG4J2_FILE.read_text(encoding="utf-8")
    assert "rootLogger.level = warn" in text and "SYSTEM_ERR" in text
    assert "org.apache.hadoop.util.NativeCodeLoader" in text


@pytest.mark.spark
def test_a_run_prints_none_of_sparks_start_up_notices(tmp_path) -> None:
    from pathlib import Path

    project = Path(__file__).parents[1] / "examples" / "wordcount"
    done = subprocess.run(
        [sys.executable, "-m", "stormshift", "run", str(project), "--max-tuples", "200",
         "--checkpoint", str(tmp_path / "ck")],
        check=False, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    for notice in ("Using Spark's default log4j profile", "NativeCodeLoader", "resolves to a loopback"):
        assert notice not in done.stderr, done.stderr[-2000:]
