"""What compiling each hot-path module is worth (``stormshift/native.py``'s ``COMPILED``).

Runs ``stage_overhead.py`` (the adclicks stages as a Spark task runs them, in one
process) with every module compiled, and with one module, or all of them, from
source (``STORMSHIFT_PURE=<module>`` / ``STORMSHIFT_PURE=1``). Each configuration
runs right after an all-compiled run (A B A B ...), and a figure is the median over
the pairs, so the machine's drift between pairs cancels: the stages' time per input
line (the three stages' time per tuple, summed: the user's ``process()`` included) of
the configuration over the all-compiled one's, and the difference in ns per line::

    python setup.py build_ext --inplace   # the compiled modules, beside their sources
    python bench/compiled_modules.py [--tuples 20000] [--pairs 5] [--rounds 2] [--modules a,b]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from stormshift import native


def per_line_ns(pure: str | None, tuples: int, rounds: int) -> tuple[float, float]:
    """(stages, bare process()) ns per input line, one process (best of ``rounds``)."""
    env = {k: v for k, v in os.environ.items() if k != native.PURE_ENV}
    if pure:
        env[native.PURE_ENV] = pure
    done = subprocess.run([sys.executable, str(REPO / "bench" / "stage_overhead.py"), "--tuples",
                           str(tuples), "--rounds", str(rounds), "--json"], env=env, check=True,
                          capture_output=True, text=True, timeout=600)
    stages = json.loads(done.stdout.strip().splitlines()[-1])["stages"]
    return (sum(s["stage_ns"] for s in stages.values()),
            sum(s["bare_ns"] for s in stages.values()))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tuples", type=int, default=20_000)
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--rounds", type=int, default=2, help="best of N per process (the first "
                   "pays one-time costs)")
    p.add_argument("--modules", default="", help="comma-separated; default: all of COMPILED")
    args = p.parse_args(argv)
    states = native.status()
    if os.environ.get(native.PURE_ENV) or any(s != "compiled" for s in states.values()):
        print(f"not every module runs compiled ({native.summary()}): build them first "
              "(python setup.py build_ext --inplace) and unset STORMSHIFT_PURE", file=sys.stderr)
        return 1
    modules = [m for m in args.modules.split(",") if m] or list(native.COMPILED)
    configs = ["1", *modules]
    ratios: dict[str, list[float]] = {c: [] for c in configs}
    deltas: dict[str, list[float]] = {c: [] for c in configs}
    compiled: list[float] = []
    framework: list[float] = []
    for _ in range(args.pairs):
        for config in configs:
            base, bare = per_line_ns(None, args.tuples, args.rounds)
            other, _ = per_line_ns(config, args.tuples, args.rounds)
            compiled.append(base)
            framework.append(base - bare)
            ratios[config].append(other / base)
            deltas[config].append(other - base)
    base = statistics.median(compiled)
    print(f"{native.summary()}; adclicks stages, {args.tuples:,} lines, {args.pairs} pairs")
    print(f"all compiled: {base / 1000:.2f} µs per line through the three stages "
          f"(framework {statistics.median(framework) / 1000:.2f} µs)")
    print(f"{'from source':>42} {'time / compiled':>16} {'ns per line':>12}  pairs")
    for config in configs:
        name = "every module" if config == "1" else config
        spread = ", ".join(f"{r:.3f}" for r in sorted(ratios[config]))
        print(f"{name:>42} {statistics.median(ratios[config]):>16.3f} "
              f"{statistics.median(deltas[config]):>+12.0f}  {spread}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
