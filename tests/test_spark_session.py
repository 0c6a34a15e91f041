"""The driver JVM's options (``stormshift/engines/spark/runtime/session.py``): our log4j2
file unless the user's ``spark.driver.extraJavaOptions`` names one, the client compiler
only on a local master unless the user chose the JIT tiers, and never in place of the
user's other JVM options."""

from __future__ import annotations

import subprocess
import sys

import pytest

from stormshift.engines.spark.runtime.session import LOG4J2_FILE, driver_jit_conf, driver_log_conf


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
