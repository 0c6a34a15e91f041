"""Does the default adclicks slow down as it ages? Batch time, last tenth against first tenth.

Runs the README's first command with the windows on (the default:
``stormshift run examples/adclicks --until-done``, ``local[2]``, embedded Redis) at
``-o adclicks.events=N`` and reads each batch's time from its progress line. The
input rate is constant (the spout's batch size), while the windowed bolts' state
grows over the first hours of event time (sessions and minutes stay open 4 h after
their end) and then holds: a per-batch cost that follows the state or the run's age
shows as late batches slower than early ones. Prints the mean and median batch
time of the first tenth of the batches with input (the first batch, which starts
the JVM's work and the Python workers, left out) and of the last tenth, and their
ratio (issue 32's target: <= 1.2 at 2M events), and the restores and catch-ups of
the run's summary (target 0). ``--repo DIR`` runs another checkout
(a baseline) first, in the same run; ``-o`` options are passed on::

    python bench/adclicks_aging.py [--events 400000] [--repo BASELINE] [-o KEY=VALUE]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STATE_ROW = re.compile(r"^│ (\w+) +│ +(\d+) │ +(\d+) │ +(\d+) │ +(\d+) │ +(\d+) │$", re.MULTILINE)
BATCH = re.compile(r"batch (\d+) txid \d+ committed \| ([\d,]+) spout tuples [\d,.]+ ev/s ([\d.]+) s")


def run(repo: str, events: int, overrides: list[str]) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=repo, COLUMNS="4000")  # progress lines unwrapped
    work = tempfile.mkdtemp(prefix="bench-aging-")
    cmd = [sys.executable, "-c", "import sys; from stormshift.cli import main; sys.exit(main())",
           "run", str(REPO / "examples" / "adclicks"), "--until-done",
           "--checkpoint", os.path.join(work, "ck"), "-o", f"adclicks.events={events}"]
    for o in overrides:
        cmd += ["-o", o]
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    text = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise SystemExit(f"{repo}: exit {proc.returncode}\n{text[-3000:]}")
    secs = [float(s) for b, n, s in BATCH.findall(text) if int(n.replace(",", "")) and int(b) > 0]
    if len(secs) < 10:
        raise SystemExit(f"{repo}: {len(secs)} batches with input after the first; run more "
                         "events (a tenth must hold a batch)")
    tenth = len(secs) // 10
    first, last = secs[:tenth], secs[-tenth:]
    # the summary's "bolt tasks run, by where their state came from" rows (component,
    # reused, caught up, restored, started, idle batches): a live instance is started once,
    # so a restore or catch-up is a batch that found its instance elsewhere (issue 32: 0)
    moved = {m[1]: int(m[3]) + int(m[4]) for m in STATE_ROW.finditer(text) if int(m[3]) + int(m[4])}
    return {"batches": len(secs), "tenth": tenth, "wall_s": wall, "moved": moved,
            "first_mean": statistics.fmean(first), "last_mean": statistics.fmean(last),
            "first_median": statistics.median(first), "last_median": statistics.median(last)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=400_000)
    p.add_argument("--repo", help="a baseline checkout, run first")
    p.add_argument("-o", dest="overrides", action="append", default=[])
    args = p.parse_args(argv)
    runs = [("baseline", args.repo)] if args.repo else []
    runs.append(("this", str(REPO)))
    for name, repo in runs:
        r = run(repo, args.events, args.overrides)
        print(f"{name:>8}: {args.events:,} events, {r['batches']} batches with input after the "
              f"first, wall {r['wall_s']:.1f} s; batch s first / last tenth ({r['tenth']} "
              f"batches each): mean {r['first_mean']:.2f} / {r['last_mean']:.2f}, median "
              f"{r['first_median']:.2f} / {r['last_median']:.2f}; last / first: mean "
              f"{r['last_mean'] / r['first_mean']:.2f}, median "
              f"{r['last_median'] / r['first_median']:.2f} (target <= 1.2); restores + catch-ups: "
              f"{sum(r['moved'].values())} {r['moved'] or ''}(target 0)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
