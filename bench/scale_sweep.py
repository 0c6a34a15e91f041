"""adclicks on Spark at scale: stormshift beside the hand-written PySpark job, swept.

Three sweeps, each point one ``bench/spark_adclicks.py`` baseline run and one
stormshift run (its phases, each in a fresh process, on the same files):

- ``batch``: events per micro-batch 10k, 100k, 1M (the 1M point 3 batches);
- ``par``:   every adclicks bolt's par 1, 2, 4 (the topology says 2);
- ``keys``:  adgen's catalogue of ad ids 1e3 .. 1e7, every ad equally popular
  (``--uniform-ads``), so the keys a batch touches follow the catalogue up to
  the events; the distinct ad ids in the data are counted and printed.

A point's figures are appended to ``--results`` (JSON) as soon as it ends, so a
sweep can run in chunks (``--sweep batch``, then ``--sweep par`` ...) and
``--report`` prints the table of everything stored. ``--quick``: smaller points.
Usage (heavy: one chunk per lock)::

    flock /tmp/stormshift-heavy.lock python bench/scale_sweep.py --sweep batch
    python bench/scale_sweep.py --report
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import spark_adclicks as sa  # the baseline, the stormshift run, steady state: beside this file

# (label, spark_adclicks arguments) per sweep; a point is keyed by its arguments
FULL = {
    "batch": [("batch 10k", {"batch": 10_000, "events": 200_000}),
              ("batch 100k", {"batch": 100_000, "events": 1_000_000}),
              ("batch 1M", {"batch": 1_000_000, "events": 3_000_000})],
    "par": [(f"par {p}", {"batch": 100_000, "events": 1_000_000, "bolt_par": p}) for p in (1, 2, 4)],
    "keys": [(f"keys 1e{e}", {"batch": 250_000, "events": 1_000_000, "ads": 10**e, "uniform_ads": True})
             for e in (3, 4, 5, 6, 7)],
}
QUICK = {
    "batch": [("batch 10k", {"batch": 10_000, "events": 100_000}),
              ("batch 50k", {"batch": 50_000, "events": 200_000}),
              ("batch 200k", {"batch": 200_000, "events": 600_000})],
    "par": [(f"par {p}", {"batch": 50_000, "events": 200_000, "bolt_par": p}) for p in (1, 2, 4)],
    "keys": [(f"keys 1e{e}", {"batch": 100_000, "events": 300_000, "ads": 10**e, "uniform_ads": True})
             for e in (3, 5, 6)],
}


def point_argv(point: dict[str, Any], common: argparse.Namespace) -> list[str]:
    """``spark_adclicks.py`` arguments of a point (its phases' command line)."""
    argv = ["--events", str(point["events"]), "--batch", str(point["batch"]),
            "--master", common.master, "--redis", common.redis, "--no-check"]
    if point.get("bolt_par") is not None:
        argv += ["--bolt-par", str(point["bolt_par"])]
    if point.get("ads") is not None:
        argv += ["--ads", str(point["ads"])]
    if point.get("uniform_ads"):
        argv.append("--uniform-ads")
    return argv


_AD_ID = re.compile(rb'"ad_id":"([^"]*)"')


def distinct_ads(data: Path) -> int:
    """Distinct ad ids in the data's lines (well-formed ones: adgen writes ad_id third)."""
    seen: set[bytes] = set()
    for path in sorted(data.glob("part-*.jsonl")):
        seen.update(_AD_ID.findall(path.read_bytes()))
    return len(seen)


def run_point(label: str, point: dict[str, Any], common: argparse.Namespace) -> dict[str, Any]:
    data = sa.ensure_data(point["events"], point["batch"], 2, Path(common.data_root),
                          point.get("ads"), bool(point.get("uniform_ads")))
    argv = point_argv(point, common)
    out: dict[str, Any] = {"label": label, "point": point, "argv": argv, "keys": distinct_ads(data),
                           "when": time.strftime("%Y-%m-%d %H:%M", time.gmtime())}
    for phase in ("baseline", "stormshift"):
        print(f"  {label}: {phase} ...", file=sys.stderr, flush=True)
        res = sa.run_phase_in_subprocess(phase, argv, script=sa.__file__)
        res.pop("totals", None)  # per-key totals: large at 1e7 keys, checked by spark_adclicks
        out[phase] = res
    return out


def load(path: Path) -> dict[str, dict[str, Any]]:
    return json.loads(path.read_text()) if path.exists() else {}


def store(path: Path, key: str, result: dict[str, Any]) -> None:
    results = load(path)
    results[key] = result
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(results, indent=1, sort_keys=True))
    os.replace(tmp, path)


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if a and b else "-"


def row(res: dict[str, Any]) -> list[str]:
    """One table row: events/s each side (steady, overall), ratios, batch p50/p99, peaks."""
    base, ours = res.get("baseline", {}), res.get("stormshift", {})
    if "error" in base or "error" in ours or not base or not ours:
        err = (base.get("error") or ours.get("error") or "missing").splitlines()[0]
        return [res["label"], f"{res['keys']:,}", f"NOT MEASURED: {err}"]

    def peak(r: dict[str, Any]) -> str:
        p = r["peak_rss"]
        return f"{p['driver_jvm'] / 2**20:,.0f} / {p['python_worker'] / 2**20:,.0f}"

    return [res["label"], f"{res['keys']:,}", f"{base['events']:,} / {base['batches']}",
            f"{base['steady_events_per_s']:,.0f}", f"{ours['steady_events_per_s']:,.0f}",
            f"**{_ratio(ours['steady_events_per_s'], base['steady_events_per_s'])}**",
            _ratio(ours["events_per_s"], base["events_per_s"]),
            _ratio(ours.get("late_events_per_s", 0), base.get("late_events_per_s", 0)),
            f"{base['batch_ms_p50']:,.0f} / {base['batch_ms_p99']:,.0f}",
            f"{ours['batch_ms_p50']:,.0f} / {ours['batch_ms_p99']:,.0f}", peak(base), peak(ours)]


HEADER = ["point", "distinct ad ids", "events / batches", "hand-written ev/s (steady)",
          "stormshift ev/s (steady)", "ratio steady", "ratio overall", "ratio last half",
          "batch p50 / p99 ms, hand-written", "batch p50 / p99 ms, stormshift",
          "peak MiB JVM / Python worker, hand-written", "peak MiB JVM / Python worker, stormshift"]


def report(results: dict[str, dict[str, Any]], order: list[str]) -> str:
    from stormshift import native

    lines = [native.summary(), "", "| " + " | ".join(HEADER) + " |",
             "|" + " --- |" * len(HEADER)]
    for key in order + sorted(set(results) - set(order)):
        if key in results:
            lines.append("| " + " | ".join(row(results[key])) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sweep", default="batch,par,keys", help="comma list of: batch, par, keys")
    p.add_argument("--quick", action="store_true", help="smaller points (minutes, not ~20)")
    p.add_argument("--only", help="comma list of point labels, e.g. 'keys 1e7'")
    p.add_argument("--report", action="store_true", help="print the stored results only")
    p.add_argument("--results", type=Path,
                   default=Path(tempfile.gettempdir()) / "stormshift-bench" / "scale_sweep.json")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--redis", default="redis://127.0.0.1:6379")
    p.add_argument("--data-root", default=os.path.join(tempfile.gettempdir(), "stormshift-bench"))
    args = p.parse_args(argv)
    plan = QUICK if args.quick else FULL
    tag = "quick" if args.quick else "full"
    sweeps = [s.strip() for s in args.sweep.split(",") if s.strip()]
    order = [f"{tag}:{label}" for s in plan for label, _ in plan[s]]
    if not args.report:
        wanted = {s.strip() for s in args.only.split(",")} if args.only else None
        for sweep in sweeps:
            for label, point in plan[sweep]:
                if wanted is None or label in wanted:
                    store(args.results, f"{tag}:{label}", run_point(label, point, args))
    print(report(load(args.results), order))
    return 0


if __name__ == "__main__":
    sys.exit(main())
