"""Task hosts on and off: where a stateful task finds its state, and what it costs per batch.

Runs ``stormshift run examples/adclicks --until-done`` (windows on, ``local[2]``,
embedded Redis) twice on this checkout, one run after the other: with task hosts
(the default, ``stormshift/engines/spark/task/task_host.py``) and with
``-o stormshift.task_hosts=false``. Prints per run: the restores and catch-ups
after the first batch (summed over every bolt from the summary's table of how bolt
tasks found their state; the first batch's tasks are ``started``: a fresh state has
nothing to restore), the median batch
time over the batches with input after the first, the mean batch time of the last
tenth of the batches against the first tenth, and the peak RSS of each task host
(sampled every 0.5 s from ``/proc``; a pid seen for under 2 s is a host's starter,
which forks the host and exits, and is left out); then the on / off ratio of the median batch::

    python bench/task_hosts.py [--events 40000] [--batch 2000] [-o KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BATCH = re.compile(r"batch (\d+) txid \d+ committed \| ([\d,]+) spout tuples [\d,.]+ ev/s ([\d.]+) s")
HOST_MODULE = "stormshift.engines.spark.task.task_host"


def _host_rss_kb() -> dict[int, int]:
    """RSS (kB) of every running task host process of this user, by pid."""
    out: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
            if HOST_MODULE.encode() not in cmd:
                continue
            for line in Path(f"/proc/{entry}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    out[int(entry)] = int(line.split()[1])
        except OSError:
            continue
    return out


STATE_TITLE = "bolt tasks run, by where their state came from"
STATE_ROW = re.compile(r"^\W*([a-z_][\w]*)\W+(\d+)\W+(\d+)\W+(\d+)\W+(\d+)\W+(\d+)\W*$")


def _state_counts(stdout: str) -> dict[str, int]:
    """Reused, catch-ups, restores and starts summed over the rows of the summary's state
    table (``RunSummary.state_table``)."""
    text = stdout[stdout.index(STATE_TITLE):]
    totals = dict.fromkeys(("reused", "catch_ups", "restores", "started"), 0)
    for line in text.splitlines()[1:]:
        if line.lstrip().startswith("\u2514"):  # the table's bottom border
            break
        m = STATE_ROW.match(line)
        if m is not None:
            for key, value in zip(totals, m.groups()[1:5]):
                totals[key] += int(value)
    return totals


def run(hosts: bool, events: int, batch: int, overrides: list[str]) -> dict[str, object]:
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="4000")  # progress lines unwrapped
    work = tempfile.mkdtemp(prefix="bench-hosts-")
    cmd = [sys.executable, "-c", "import sys; from stormshift.cli import main; sys.exit(main())",
           "run", str(REPO / "examples" / "adclicks"), "--until-done",
           "--checkpoint", os.path.join(work, "ck"), "--batch-max-tuples", str(batch),
           "-o", f"adclicks.events={events}",
           "-o", f"stormshift.task_hosts={'true' if hosts else 'false'}"]
    for o in overrides:
        cmd += ["-o", o]
    before = set(_host_rss_kb())
    peak: dict[int, int] = {}
    seen: dict[int, int] = {}  # samples a pid was in: a host's starter lives < 1 s (it forks)
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            for pid, kb in _host_rss_kb().items():
                if pid not in before:
                    peak[pid] = max(peak.get(pid, 0), kb)
                    seen[pid] = seen.get(pid, 0) + 1
            done.wait(0.5)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    done.set()
    sampler.join()
    text = proc.stdout + proc.stderr
    if proc.returncode not in (0, 3):  # 3: finished with dead letters (adclicks' malformed lines)
        raise SystemExit(f"exit {proc.returncode}\n{text[-3000:]}")
    counts = _state_counts(proc.stdout)
    secs = [(int(b), int(n.replace(",", "")), float(s)) for b, n, s in BATCH.findall(text)]
    data = [s for b, n, s in secs if n and b > 0]
    tenth = max(len(data) // 10, 1)
    return {
        **counts,
        "median_s": statistics.median(data) if data else 0.0,
        "late_early": (statistics.mean(data[-tenth:]) / statistics.mean(data[:tenth])) if data else 0.0,
        "batches": len(secs), "wall_s": wall,
        "host_rss_mb": sorted(round(kb / 1024) for pid, kb in peak.items() if seen[pid] >= 4),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--events", type=int, default=40_000)
    p.add_argument("--batch", type=int, default=2_000, help="--batch-max-tuples")
    p.add_argument("-o", dest="overrides", action="append", default=[])
    args = p.parse_args(argv)
    res = {}
    for hosts in (True, False):
        r = res[hosts] = run(hosts, args.events, args.batch, args.overrides)
        print(f"task hosts {'on ' if hosts else 'off'}: {r['batches']} batches, restores after "
              f"batch 0 {r['restores']}, catch-ups {r['catch_ups']}, reused {r['reused']}, "
              f"started {r['started']}; median batch {r['median_s']:.2f} s, last / first tenth "
              f"{r['late_early']:.2f}, wall {r['wall_s']:.1f} s, host peak RSS MB "
              f"{r['host_rss_mb']}", flush=True)
    on, off = res[True], res[False]
    print(f"on / off: median batch {on['median_s'] / off['median_s']:.2f}, wall "
          f"{on['wall_s'] / off['wall_s']:.2f}; restores + catch-ups after batch 0: "
          f"{on['restores'] + on['catch_ups']} vs {off['restores'] + off['catch_ups']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
