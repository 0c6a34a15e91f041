"""The README's first command, windows off and on, on this checkout and a baseline one.

Runs ``stormshift run examples/adclicks --until-done`` (``local[2]``, embedded
Redis) with ``-o adclicks.windows=false`` and with the windows on, for each
checkout (``--repo DIR`` is the baseline, e.g. ``git archive`` of main), one run
after the other, and reads each batch's time from the progress lines: median
batch seconds over the batches with input after the first, the run's wall
seconds, and the ratios new / baseline and windows on / off per checkout.
``-o`` options are passed on (e.g. ``-o adclicks.events=60000``)::

    python bench/idle_stages.py --repo /tmp/base [-o adclicks.events=60000]
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
BATCH = re.compile(r"batch (\d+) txid \d+ committed \| ([\d,]+) spout tuples [\d,.]+ ev/s ([\d.]+) s")


def run(repo: str, windows: bool, overrides: list[str]) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=repo, COLUMNS="4000")  # progress lines unwrapped
    work = tempfile.mkdtemp(prefix="bench-idle-")
    cmd = [sys.executable, "-c", "import sys; from stormshift.cli import main; sys.exit(main())",
           "run", str(REPO / "examples" / "adclicks"), "--until-done",
           "--checkpoint", os.path.join(work, "ck"),
           "-o", f"adclicks.windows={'true' if windows else 'false'}"]
    for o in overrides:
        cmd += ["-o", o]
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    text = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise SystemExit(f"{repo}: exit {proc.returncode}\n{text[-3000:]}")
    secs = [(int(b), int(n.replace(",", "")), float(s)) for b, n, s in BATCH.findall(text)]
    data = [s for b, n, s in secs if n and b > 0]
    return {"median_s": statistics.median(data) if data else 0.0, "batches": len(secs),
            "sum_s": sum(s for _, _, s in secs), "wall_s": wall}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repo", required=True, help="the baseline checkout")
    p.add_argument("-o", dest="overrides", action="append", default=[])
    args = p.parse_args(argv)
    res = {}
    for name, repo in (("baseline", args.repo), ("this", str(REPO))):
        for windows in (False, True):
            r = res[(name, windows)] = run(repo, windows, args.overrides)
            print(f"{name:>8} windows={'on ' if windows else 'off'}: {r['batches']} batches, "
                  f"median batch {r['median_s']:.2f} s, batches {r['sum_s']:.1f} s, "
                  f"wall {r['wall_s']:.1f} s", flush=True)
    for windows in (False, True):
        b, t = res[("baseline", windows)], res[("this", windows)]
        print(f"windows={'on ' if windows else 'off'}: this / baseline: median batch "
              f"{t['median_s'] / b['median_s']:.2f}, batches {t['sum_s'] / b['sum_s']:.2f}")
    for name in ("baseline", "this"):
        on, off = res[(name, True)], res[(name, False)]
        print(f"{name}: windows on / off, batches {on['sum_s'] / off['sum_s']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
