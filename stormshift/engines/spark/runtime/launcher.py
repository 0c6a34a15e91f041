"""The interpreter a local master starts its Python processes with.

Spark starts every Python process of a job -- task workers, and the
data-source planners and streaming-source runner of each query (these run
``pyspark.daemon`` or their own module, never ``spark.python.daemon.module``)
-- with ``$SPARK_HOME/python/lib/pyspark.zip``, py4j's zip and the spark-core
jar first on ``PYTHONPATH``. With pyspark pip-installed that only costs: the
zips hold no bytecode, so each process compiles pyspark's sources again
(importing the streaming-source runner: 1.8 s of CPU from the zip, 0.6 s from
the installed package here), and the jar holds no Python at all.

On a local master, when the user chose no interpreter (``PYSPARK_PYTHON``,
``spark.pyspark.python``), the engine points pyspark at a small shell script
that drops exactly those archives from ``PYTHONPATH`` -- only the ones whose
installed twin is the same version -- and ``exec``s the driver's own
interpreter (so workers also run the Python stormshift is installed in, not
whatever ``python3`` is first on ``PATH``). Everything else on ``PYTHONPATH``
stays, in order. Where the temp dir is mounted ``noexec`` there is no launcher:
Spark's own defaults apply.
"""

from __future__ import annotations

import atexit
import os
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

from stormshift.engines.spark.runtime.daemon import without_moduleless_archives, without_spark_zip

__all__ = ["launcher_script", "redundant_archives", "worker_python"]

_PY4J_ZIP = re.compile(r"py4j-(.+)-src\.zip")


def _dist_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def redundant_archives(spark_home: str | os.PathLike[str], path: Sequence[str] = sys.path) -> list[str]:
    """The archives Spark puts on its workers' ``PYTHONPATH`` that the packages on ``path``
    make redundant: the ones the daemon would take off ``sys.path`` (``pyspark.zip`` of the
    installed version, jars without Python) and py4j's zip of the installed py4j version."""
    home = Path(spark_home)
    lib = home / "python" / "lib"
    spark = [str(z) for z in (lib / "pyspark.zip",) if z.is_file()]
    jars = [str(j) for j in sorted((home / "jars").glob("spark-core_*.jar"))]
    kept = set(without_moduleless_archives(without_spark_zip([*spark, *jars, *path])))
    py4j = _dist_version("py4j")
    zips = [str(z) for z in sorted(lib.glob("py4j-*-src.zip"))
            if py4j and (m := _PY4J_ZIP.fullmatch(z.name)) and m.group(1) == py4j]
    return [a for a in spark if a not in kept] + zips + [j for j in jars if j not in kept]


def launcher_script(python: str, drop: Sequence[str]) -> str:
    """A POSIX shell script: ``PYTHONPATH`` without the ``drop`` entries, then ``exec python``."""
    patterns = "|".join(shlex.quote(p) for p in drop) or "''"
    return (
        "#!/bin/sh\n"
        "# Written by stormshift (stormshift/engines/spark/runtime/launcher.py): Spark's Python\n"
        "# processes without archives an installed package of the same version replaces.\n"
        "set -f\n"
        "keep=\n"
        "IFS=:\n"
        "for p in ${PYTHONPATH-}; do\n"
        f"  case \"$p\" in\n    {patterns}) ;;\n"
        "    *) keep=\"${keep:+$keep:}$p\" ;;\n"
        "  esac\n"
        "done\n"
        "unset IFS\n"
        "if [ -n \"$keep\" ]; then export PYTHONPATH=\"$keep\"; else unset PYTHONPATH; fi\n"
        "# the streaming-source runner through stormshift's (quiet at the JVM's end of stream)\n"
        "for a do shift; [ \"$a\" = pyspark.sql.streaming.python_streaming_source_runner ] "
        "&& a=stormshift.engines.spark.runtime.source_runner; set -- \"$@\" \"$a\"; done\n"
        f"exec {shlex.quote(python)} \"$@\"\n"
    )


def _write_launcher(python: str, drop: Sequence[str]) -> str | None:
    """The script's path, or None where the temp dir's file system forbids running it."""
    folder = tempfile.mkdtemp(prefix="stormshift-python-")
    atexit.register(shutil.rmtree, folder, True)
    if os.statvfs(folder).f_flag & os.ST_NOEXEC:  # e.g. /tmp mounted noexec: Spark's default
        return None
    path = os.path.join(folder, "python")
    with open(path, "w", encoding="utf-8") as f:
        f.write(launcher_script(python, drop))
    os.chmod(path, 0o755)
    return path


def _spark_home() -> str | None:
    try:
        from pyspark.find_spark_home import _find_spark_home

        return _find_spark_home()
    except (Exception, SystemExit):  # noqa: BLE001 - it exits when it finds none: pyspark's
        return None  # own start reports that, not this optional step


@contextmanager
def worker_python(master: str, conf: Mapping[str, str] | None = None,
                  environ: dict[str, str] | os._Environ[str] = os.environ) -> Iterator[str | None]:
    """While a session is created: ``PYSPARK_PYTHON`` = the launcher, on a local master
    where the user set no other interpreter (naming this one counts as none) and ``os.name``
    is POSIX. pyspark reads it once,
    when the SparkContext starts; the variable is restored afterwards."""
    local = master == "local" or master.startswith("local[")
    mine = environ.get("PYSPARK_PYTHON")
    chosen = "spark.pyspark.python" in (conf or {}) or (
        mine is not None and not _is_this_python(mine))  # naming this very one: no choice
    home = _spark_home() if local and not chosen and os.name == "posix" else None
    launcher = _write_launcher(sys.executable, redundant_archives(home)) if home else None
    if launcher:
        environ["PYSPARK_PYTHON"] = launcher
    try:
        yield launcher
    finally:
        if launcher and mine is not None:
            environ["PYSPARK_PYTHON"] = mine
        elif launcher:
            environ.pop("PYSPARK_PYTHON", None)


def _is_this_python(name: str) -> bool:
    """Whether ``name`` (a path, or a command on PATH) is the interpreter running here."""
    found = shutil.which(name)
    return found is not None and os.path.realpath(found) == os.path.realpath(sys.executable)
