"""A whole ``stormshift run`` with and without the driver JVM's class-data archive
(``stormshift/engines/spark/runtime/classcache.py``), alternating, in one run of this script.

Each round runs ``stormshift run examples/wordcount --max-tuples N`` twice in fresh
directories: once mapping the archive, once with ``STORMSHIFT_JVM_CLASS_CACHE=off``. It
prints per run the seconds until the driver printed ``Spark UI:`` (the JVM and the session
are up) and until the process exited, then the medians and the on / off ratios. The archive
is built first in a private cache dir (that build's exit time is printed too).

    python bench/jvm_class_cache.py [--rounds 3] [--tuples 100]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def one_run(tuples: int, env: dict[str, str], folder: Path) -> tuple[float, float]:
    """(seconds to ``Spark UI:``, seconds to exit) of one run."""
    started = time.perf_counter()
    up: float | None = None
    proc = subprocess.Popen(
        [sys.executable, "-m", "stormshift", "run", str(REPO / "examples" / "wordcount"),
         "--max-tuples", str(tuples), "--checkpoint", str(folder / "checkpoint")],
        cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        if "Spark UI:" in line and up is None:
            up = time.perf_counter() - started
    if proc.wait() != 0:
        raise SystemExit(f"run failed in {folder}")
    if up is None:
        raise SystemExit(f"no 'Spark UI:' line from the run in {folder}")
    return up, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tuples", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="jvm-class-cache-") as root:
        base = {**os.environ, "STORMSHIFT_CACHE_DIR": str(Path(root, "cache")),
                "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH"))
                                              if p)}
        base.pop("STORMSHIFT_JVM_CLASS_CACHE", None)
        envs = {"on": base, "off": {**base, "STORMSHIFT_JVM_CLASS_CACHE": "off"}}
        build = Path(root, "build")
        build.mkdir()
        up, total = one_run(args.tuples, base, build)
        print(f"building run (writes the archive at exit): up {up:.2f} s, exit {total:.2f} s")
        results: dict[str, list[tuple[float, float]]] = {"on": [], "off": []}
        for n in range(args.rounds):
            for name, env in envs.items():
                folder = Path(root, f"{name}{n}")
                folder.mkdir()
                results[name].append(one_run(args.tuples, env, folder))
                print(f"round {n + 1} {name:3}: up {results[name][-1][0]:.2f} s, "
                      f"exit {results[name][-1][1]:.2f} s", flush=True)
        med = {name: (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))
               for name, runs in results.items()}
        for name, (up, total) in med.items():
            print(f"median {name:3}: up {up:.2f} s, exit {total:.2f} s")
        print(f"on / off: session up {med['on'][0] / med['off'][0]:.2f}, "
              f"whole run {med['on'][1] / med['off'][1]:.2f}")


if __name__ == "__main__":
    main()
