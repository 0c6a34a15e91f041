"""The interpreter local Spark starts its Python processes with
(``stormshift/engines/spark/runtime/launcher.py``): the driver's Python, without archives an
installed package of the same version replaces."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from stormshift.engines.spark.runtime.launcher import (
    launcher_script,
    redundant_archives,
    worker_python,
)

PYSPARK = metadata.version("pyspark")
PY4J = metadata.version("py4j")


def _zip(path: Path, files: dict[str, str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return path


def test_only_archives_an_installed_package_of_the_same_version_replaces(tmp_path: Path) -> None:
    home = tmp_path / "spark"
    lib = home / "python" / "lib"
    same = _zip(lib / "pyspark.zip", {"pyspark/version.py": f'__version__: str = "{PYSPARK}"\n'})
    py4j = _zip(lib / f"py4j-{PY4J}-src.zip", {"py4j/__init__.py": ""})
    old_py4j = _zip(lib / "py4j-0.0.1-src.zip", {"py4j/__init__.py": ""})
    core = _zip(home / "jars" / "spark-core_2.13-9.9.9.jar", {"org/apache/X.class": "x"})
    assert redundant_archives(home) == [str(same), str(py4j), str(core)]
    assert str(old_py4j) not in redundant_archives(home)

    _zip(lib / "pyspark.zip", {"pyspark/version.py": '__version__ = "0.1.0"\n'})
    _zip(home / "jars" / "spark-core_2.13-9.9.9.jar", {"pyspark/__init__.py": ""})
    assert redundant_archives(home) == [str(py4j)], "another pyspark, a jar with Python: kept"


def _run(script: Path, pythonpath: str | None, *args: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    code = ("import json, os, sys; print(json.dumps({'pythonpath': os.environ.get('PYTHONPATH'), "
            "'exe': sys.executable, 'argv': sys.argv[1:]}))")
    done = subprocess.run([str(script), "-c", code, *args], env=env, capture_output=True,
                          text=True, check=True, timeout=60)
    return json.loads(done.stdout)


def test_the_launcher_drops_exactly_the_listed_entries_and_runs_the_given_python(
        tmp_path: Path) -> None:
    drop = ["/spark/python/lib/pyspark.zip", "/spark/jars/it's core.jar"]
    script = tmp_path / "python"
    script.write_text(launcher_script(sys.executable, drop))
    script.chmod(0o755)

    got = _run(script, f"/a:{drop[0]}:/b c:{drop[1]}:/x/*:/spark/python/lib/other.zip",
               "one arg", "*")
    assert got["pythonpath"] == "/a:/b c:/x/*:/spark/python/lib/other.zip"
    assert got["argv"] == ["one arg", "*"]
    assert Path(got["exe"]).resolve() == Path(sys.executable).resolve()
    assert _run(script, ":".join(drop))["pythonpath"] is None
    assert _run(script, None)["pythonpath"] is None


def test_the_launcher_is_used_only_where_the_user_chose_no_interpreter(tmp_path: Path) -> None:
    env: dict[str, str] = {}
    with worker_python("local[2]", {}, env) as launcher:
        assert launcher and env["PYSPARK_PYTHON"] == launcher
        assert Path(launcher).read_text().startswith("#!/bin/sh\n")
    assert "PYSPARK_PYTHON" not in env, "pyspark reads it once, at SparkContext start"

    mine = {"PYSPARK_PYTHON": "/opt/python3.11"}
    with worker_python("local[*]", {}, mine) as launcher:
        assert launcher is None
    assert mine == {"PYSPARK_PYTHON": "/opt/python3.11"}
    with worker_python("local", {"spark.pyspark.python": "/opt/py"}, env) as launcher:
        assert launcher is None and env == {}
    with worker_python("spark://host:7077", {}, env) as launcher:
        assert launcher is None and env == {}


def test_no_launcher_where_the_temp_dir_cannot_run_programs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``noexec`` /tmp would leave Spark unable to start any Python process."""
    real = os.statvfs

    class NoExec:
        def __init__(self, path: str) -> None:
            self.f_flag = real(path).f_flag | os.ST_NOEXEC

    monkeypatch.setattr(os, "statvfs", NoExec)
    env: dict[str, str] = {}
    with worker_python("local[2]", {}, env) as launcher:
        assert launcher is None and env == {}


@pytest.mark.skipif(os.name != "posix", reason="the launcher is a POSIX shell script")
def test_spark_python_processes_run_the_drivers_python_without_spark_archives(spark: Any) -> None:
    def probe(batches: Any) -> Any:
        import os
        import sys

        import pyarrow as pa

        for _ in batches:
            pass
        yield pa.RecordBatch.from_pydict({"pythonpath": [os.environ.get("PYTHONPATH", "")],
                                          "exe": [sys.executable], "prefix": [sys.prefix]})

    rows = spark.range(1).mapInArrow(probe, "pythonpath string, exe string, prefix string"
                                     ).collect()
    assert rows
    for row in rows:
        entries = row.pythonpath.split(os.pathsep) if row.pythonpath else []
        assert not [e for e in entries if e.endswith(("pyspark.zip", ".jar"))], entries
        assert Path(row.exe).resolve() == Path(sys.executable).resolve()
        # a virtualenv's python is a symlink to the base one: the prefix tells them apart
        # (.ci/run runs the suite in a fresh virtualenv)
        assert row.prefix == sys.prefix


def test_the_streaming_source_runner_goes_through_stormshifts_quiet_one(tmp_path) -> None:
    """The launcher swaps pyspark's runner module for ``runtime/source_runner.py`` (its EOF
    at a stop is no traceback on the console), every other argument kept in order."""
    import subprocess

    from stormshift.engines.spark.runtime.launcher import launcher_script

    script = tmp_path / "python"
    script.write_text(launcher_script("/bin/echo", []))
    script.chmod(0o755)
    out = subprocess.run([str(script), "-u", "-m",
                          "pyspark.sql.streaming.python_streaming_source_runner", "x"],
                         capture_output=True, text=True, check=True).stdout
    assert out.split() == ["-u", "-m", "stormshift.engines.spark.runtime.source_runner", "x"]
    out = subprocess.run([str(script), "-m", "pyspark.daemon"], capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["-m", "pyspark.daemon"]


def test_an_eof_from_the_jvm_and_the_failed_report_after_it_are_a_stop() -> None:
    from stormshift.engines.spark.runtime.source_runner import closed_by_the_jvm

    def raised_while_handling_eof() -> BaseException:
        try:
            try:
                raise EOFError
            except EOFError:
                raise BrokenPipeError(32, "Broken pipe") from None
        except BrokenPipeError as error:
            error.__context__ = EOFError()
            return error

    assert closed_by_the_jvm(raised_while_handling_eof())
    assert closed_by_the_jvm(EOFError())
    assert not closed_by_the_jvm(ValueError("a real error"))
    assert not closed_by_the_jvm(OSError(28, "No space left on device"))
