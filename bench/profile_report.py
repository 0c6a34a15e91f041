"""Where a stormshift run's Python time went: ``python bench/profile_report.py DIR``.

``DIR`` is what ``STORMSHIFT_PROFILE=DIR`` collected (``stormshift/engines/spark/diagnostics/profiling.py``):
per component and batch, the tasks' wall and CPU seconds (summed over tasks) and the span
from the first task's start to the last one's end; then, if cProfile files exist, the
functions with the most own time over all tasks.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import pstats
import re
from collections import defaultdict


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--top", type=int, default=20, help="functions to list (cProfile files)")
    args = ap.parse_args(argv)
    path = os.path.join(args.dir, "tasks.jsonl")
    if not os.path.exists(path):
        raise SystemExit(f"{path}: no profile (run with STORMSHIFT_PROFILE={args.dir})")
    with open(path, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    groups: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        groups[row["label"]].append(row)
    t0 = min(r["start"] for r in rows)
    print(f"{'label':36} {'tasks':>5} {'wall s':>8} {'cpu s':>8} {'from s':>7} {'to s':>7}")
    for label, items in sorted(groups.items(), key=lambda kv: min(r["start"] for r in kv[1])):
        start = min(r["start"] for r in items) - t0
        end = max(r["start"] + r["wall_s"] for r in items) - t0
        print(f"{label:36} {len(items):5} {sum(r['wall_s'] for r in items):8.2f} "
              f"{sum(r['cpu_s'] for r in items):8.2f} {start:7.2f} {end:7.2f}")
    files = glob.glob(os.path.join(args.dir, "*.prof"))
    by_component: dict[str, list[str]] = defaultdict(list)
    for f in files:
        name = re.sub(r"^(stage-\d+-|host-\d+-|source-)", "", os.path.basename(f)).rsplit("-", 2)[0]
        by_component[name].append(f)
    for name, paths in sorted(by_component.items()):
        print(f"\n== {name}: own time, all tasks ==")
        pstats.Stats(*paths).sort_stats("tottime").print_stats(args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
